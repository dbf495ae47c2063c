package sched

import (
	"slices"
	"time"
)

// pace bounds how many jobs the runner keeps in a step at once by how fast
// the store answers: what a store can write per second, more jobs at once
// do not write faster, they only wait longer for every write, and a lease
// renewal waits with them. At 30,000 queued jobs on a PostgreSQL on two
// cores, 10,000 jobs at once (the default Workers) made each write wait 5
// to 15 seconds, and leases lapsed before their renewals landed: one task
// in three ran again, so the cost per job grew with the fleet.
//
// It starts at initialAdmit jobs and paces like TCP's congestion window,
// from the claim writes' round trips (a claim is one lock write, queued
// with every other write the store has): while the pace was what held the
// round back, a round whose median round trip m stays under half the
// target grows admit by target/(2m), at most doubling it (at m under a
// quarter of the target); one whose median exceeds the target halves it;
// in between admit holds. Growth in proportion keeps the next round's
// median under half the target if round trips grow with the jobs at once.
// It grew only by doubling, under a quarter of the target, before: at
// 10,000 jobs on PostgreSQL a round of 4,096 claims answered in 260 ms
// instead of 190 ms held admit at 8,192, and the last 1,808 jobs started 4
// seconds late (docs/benchmarks.md). The target is LeaseDuration/30 (1 s
// at the default lease), at least 100 ms: far from the lease, and far
// above what a store that keeps up takes. On a store that keeps up, admit
// reaches Workers within a few rounds of a few milliseconds each.
type pace struct {
	admit   int
	target  time.Duration
	limited bool // the round in flight was held back by admit
	took    []time.Duration
}

// initialAdmit is the first round's bound: a few group commits' worth.
const initialAdmit = 2048

// minAdmit is the least admit goes down to.
const minAdmit = 64

func newPace(lease time.Duration, workers int) pace {
	return pace{admit: min(initialAdmit, workers), target: max(lease/30, 100*time.Millisecond)}
}

func (p *pace) roundStarts(limited bool) {
	p.limited = limited
	p.took = p.took[:0]
}

// note takes the round trip of one successful claim write.
func (p *pace) note(d time.Duration) { p.took = append(p.took, d) }

// roundEnded adjusts admit from the round's round trips; it reports whether
// admit grew, so that a round may start at once.
func (p *pace) roundEnded(workers int) bool {
	if len(p.took) == 0 {
		return false
	}
	slices.Sort(p.took)
	median := p.took[len(p.took)/2]
	switch {
	case median > p.target:
		p.admit = max(p.admit/2, minAdmit)
	case median < p.target/2 && p.limited && p.admit < workers:
		grow := min(float64(p.target)/(2*float64(max(median, 1))), 2)
		next := min(int(float64(p.admit)*grow), workers)
		if next <= p.admit {
			return false
		}
		p.admit = next
		return true
	}
	return false
}
