// Package wiretally counts what a job's BMC calls cost on the wire, for
// package job's Status.Wire: a step's [Tally] adds what the connections it
// used counted (bmc.StatsReporter) to what the job had cost before.
package wiretally

import "github.com/bmckit/bmckit/bmc"

// Tally is what a step's BMC calls cost on the wire, for Status.Wire:
// what the job had cost before (Status.Wire when the step first got a
// connection, plus failed dials) and what the connection counted since the
// step got it. A pooled connection (bmc.StatsReporter) counts its own calls
// only, also when it shares its session with other systems' jobs; one the
// pool dialed or opened for the step counted nothing before.
type Tally struct {
	started bool
	counts  bool      // something reported what it cost: Status.Wire is set
	from    bmc.Stats // the job's cost before drv
	drv     bmc.Driver
	base    bmc.Stats // drv's Stats when the step got it
}

// Count notes that the step of the job whose Status.Wire is wire uses drv
// from now on; fresh: the pool dialed or opened it for this step.
func (w *Tally) Count(wire **bmc.Stats, drv bmc.Driver, fresh bool) {
	if drv == w.drv {
		return
	}
	w.start(wire)
	w.from = w.total() // the previous connection's share, if any
	w.drv, w.base = drv, bmc.Stats{}
	if sr, ok := drv.(bmc.StatsReporter); ok {
		w.counts = true
		if !fresh {
			w.base = sr.Stats()
		}
	}
}

func (w *Tally) start(wire **bmc.Stats) {
	if !w.started {
		w.started = true
		if cur := *wire; cur != nil {
			w.from, w.counts = *cur, true
		}
	}
}

func (w *Tally) total() bmc.Stats {
	if sr, ok := w.drv.(bmc.StatsReporter); ok {
		return w.from.Add(sr.Stats().Since(w.base))
	}
	return w.from
}

// Record stores in *wire (the job's Status.Wire) what the job cost on the
// wire so far.
func (w *Tally) Record(wire **bmc.Stats) {
	w.start(wire)
	if w.counts {
		total := w.total()
		*wire = &total
	}
}

// Add adds c, a cost no connection of the step counts (a failed dial, the
// logout of a shared session the job's completion ended), and records.
func (w *Tally) Add(wire **bmc.Stats, c bmc.Stats) {
	w.start(wire)
	w.from = w.from.Add(c)
	w.counts = true
	w.Record(wire)
}
