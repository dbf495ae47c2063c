package monitor

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/internal/dueheap"
	"github.com/bmckit/bmckit/storage"
)

// This file is the monitor's event loop. One goroutine owns the schedule: a
// map of the machine records it follows through the change feed and a timer
// heap of when each is due. A due machine gets a goroutine for one refresh
// (refresh.go), bounded by Config.Workers.

// entry is one machine as the loop knows it.
type entry struct {
	key   string
	rec   *Machine
	rev   int64
	ep    bmc.Endpoint
	epErr error
	// bmcKey is the ep.Key() under which the entry is in loop.byBMC ("" when
	// it is not).
	bmcKey string

	dueheap.Entry // when the next read is due, in the loop's timer heap
	running       bool
	// force: read at once, whatever the schedule (the credentials changed).
	force bool
	// deferUntil: a job on another runner held the system; look again then.
	deferUntil time.Time

	// Observation of another replica's claim: this replica counts the
	// interval from when it first saw the claim (obsAt), not from the
	// claimer's clock.
	obsOwner string
	obsSeq   int64
	obsAt    time.Time
	obsDraw  time.Duration

	// The credentials this replica last read the machine with (a hash, in
	// memory only) and the claim that read belonged to.
	lastHash string
	lastSeq  int64
}

// DueEntry implements dueheap.Item.
func (e *entry) DueEntry() *dueheap.Entry { return &e.Entry }

// loop is the state of one Start.
type loop struct {
	m        *Monitor
	ctx      context.Context
	follower *storage.Follower
	machines map[string]*entry
	byBMC    map[string]map[string]*entry // ep.Key() -> record key -> entry (eventleader.go)
	due      dueheap.Heap[*entry]
	results  chan outcome
	checks   chan map[string]string
	checking bool
	running  int
	wg       sync.WaitGroup

	nextScan  time.Time
	nextCheck time.Time
}

// Idle reports whether the running monitor's loop is waiting with nothing
// left to do at time now: it handled every Add, Remove and
// CredentialsChanged made so far, no read is in flight, nothing is due
// before a time later than now, and (with Config.Events) the event
// follower read the events stored before now and waits too. It is for
// tests that drive a fake clock (Config.Clock): move the clock, then poll
// Idle(clk.Now()) before looking at the records or moving the clock again. It is false before Start and
// while the loop runs; on the wall clock it is true only by chance.
func (m *Monitor) Idle(now time.Time) bool {
	return m.pokesSeen.Load() == m.pokes.Load() && m.quietAt.Load() == now.UnixNano() && m.inflight.Load() == 0 &&
		(m.cfg.Events == nil || m.evQuietAt.Load() == now.UnixNano())
}

// Start runs the monitor until ctx is done, then waits for the reads in
// flight to stop (closing its own pool, if it made one). It returns nil
// after a clean stop. A Monitor can be started once. It fits
// controller-runtime's manager.Runnable.
func (m *Monitor) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("monitor: already started")
	}
	m.started = true
	m.mu.Unlock()
	if _, ok := m.cfg.Store.(storage.ChangeFeed); !ok {
		m.log.Info("the Store has no change feed (storage.ChangeFeed): every scan lists all machine records")
	}
	l := &loop{
		m: m, ctx: ctx, follower: storage.NewFollower(m.cfg.Store, m.prefix), machines: map[string]*entry{}, byBMC: map[string]map[string]*entry{},
		results: make(chan outcome, 64), checks: make(chan map[string]string, 1),
	}
	if m.cfg.CredentialsCheckInterval > 0 {
		l.nextCheck = m.cfg.Clock.Now().Add(m.cfg.CredentialsCheckInterval)
	}
	if m.cfg.Events != nil {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			m.followEvents(ctx)
		}()
	}
	defer func() {
		l.wg.Wait()
		if m.ownPool {
			_ = m.pool.Close(context.WithoutCancel(ctx))
		}
	}()
	for {
		m.quietAt.Store(0)
		now := m.cfg.Clock.Now()
		if !now.Before(l.nextScan) {
			l.scan(now)
			l.nextScan = m.cfg.Clock.Now().Add(m.cfg.ScanInterval)
		}
		if !l.checking && (m.pendingChecks() || (!l.nextCheck.IsZero() && !now.Before(l.nextCheck))) {
			l.check(now)
		}
		l.launchDue(now)
		wait := l.nextScan.Sub(now)
		if !l.nextCheck.IsZero() && !l.checking {
			wait = min(wait, l.nextCheck.Sub(now))
		}
		first, queued := l.due.Peek()
		if queued && l.running < m.cfg.Workers {
			wait = min(wait, first.Due().Sub(now))
		}
		timer := m.cfg.Clock.After(max(wait, 0))
		if l.running == 0 && !l.checking && len(m.wake) == 0 && (!queued || first.Due().After(now)) {
			m.quietAt.Store(now.UnixNano()) // for tests on a fake clock
		} else {
			m.quietAt.Store(0)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.wake:
			m.quietAt.Store(0)
			m.pokesSeen.Store(m.pokes.Load())
			l.nextScan = time.Time{}
		case o := <-l.results:
			l.finished(o)
		case hashes := <-l.checks:
			l.checked(hashes)
		case <-timer:
		}
	}
}

// scan applies the store's changes to the schedule. This monitor's own
// writes are skipped without decoding them.
func (l *loop) scan(now time.Time) {
	m := l.m
	events, err := l.follower.Next(l.ctx)
	if err != nil && l.ctx.Err() == nil {
		m.log.Error(err, "reading machine changes failed; will retry")
	}
	for _, ev := range events {
		e := l.machines[ev.Key]
		if ev.Type == storage.EventDelete {
			if e != nil {
				l.unschedule(e)
				l.unindex(e)
				delete(l.machines, ev.Key)
			}
			m.mu.Lock()
			delete(m.own, ev.Key)
			m.mu.Unlock()
			continue
		}
		if (e != nil && ev.Revision <= e.rev) || m.isOwn(ev.Key, ev.Revision) {
			continue
		}
		mc, err := Decode(ev.Value)
		if err != nil {
			m.log.Error(err, "skipping undecodable machine record", "key", ev.Key)
			continue
		}
		first := e == nil
		if first {
			e = &entry{key: ev.Key}
			l.machines[ev.Key] = e
		}
		if first || e.rec.BMC != mc.BMC {
			e.ep, e.epErr = bmc.ParseEndpoint(mc.BMC)
		}
		e.rec, e.rev = mc, ev.Revision
		l.index(e)
		if !e.running {
			l.schedule(e, now, first)
		}
	}
	m.machines.Store(int64(len(l.machines)))
}

// schedule computes when e is due and puts it in the heap.
func (l *loop) schedule(e *entry, now time.Time, firstSight bool) {
	m := l.m
	r := e.rec.Refresh
	var due time.Time
	switch {
	case e.epErr != nil:
		l.unschedule(e) // an address that does not parse is never read
		return
	case e.force || r.Owner == "":
		due = now
	case r.Owner == m.cfg.Owner:
		// Our own claim (perhaps from before a restart): our own clock.
		due = r.Next
	default:
		if e.obsOwner != r.Owner || e.obsSeq != r.Seq {
			e.obsOwner, e.obsSeq, e.obsAt = r.Owner, r.Seq, now
			if firstSight {
				// When the claim was made is unknown: wait at least a
				// whole interval, spread over the next one.
				e.obsDraw = m.spread()
			} else {
				e.obsDraw = m.jittered()
			}
		}
		due = e.obsAt.Add(e.obsDraw)
	}
	if due.Before(e.deferUntil) && !e.force {
		due = e.deferUntil
	}
	l.due.Set(e, due)
}

func (l *loop) unschedule(e *entry) {
	l.due.Remove(e)
}

// launchDue starts a refresh for every due machine, up to Workers.
func (l *loop) launchDue(now time.Time) {
	m := l.m
	for l.running < m.cfg.Workers {
		if first, ok := l.due.Peek(); !ok || first.Due().After(now) {
			return
		}
		e := l.due.Pop()
		e.running = true
		l.running++
		m.inflight.Add(1)
		job := refreshJob{key: e.key, rec: e.rec, rev: e.rev, ep: e.ep, force: e.force, events: l.eventsLeader(e)}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			o := m.refresh(l.ctx, job)
			select {
			case l.results <- o:
			case <-l.ctx.Done():
			}
		}()
	}
}

// finished applies a refresh's outcome.
func (l *loop) finished(o outcome) {
	m := l.m
	l.running--
	m.inflight.Add(-1)
	e := l.machines[o.key]
	if e == nil {
		return // deleted meanwhile
	}
	e.running = false
	now := m.cfg.Clock.Now()
	if o.rec != nil && o.rev > e.rev {
		if o.rec.BMC != e.rec.BMC {
			e.ep, e.epErr = bmc.ParseEndpoint(o.rec.BMC)
		}
		e.rec, e.rev = o.rec, o.rev
		l.index(e)
	}
	switch o.kind {
	case outcomeRead:
		e.force = false
		e.deferUntil = time.Time{}
		e.lastHash, e.lastSeq = o.hash, o.seq
	case outcomeLost:
		// Another replica claimed it, or the record changed: the record
		// returned is the current one, scheduled as if seen in the feed.
	case outcomeDeferred:
		e.deferUntil = now.Add(min(m.cfg.Interval, 30*time.Second))
	case outcomeGone:
		l.unschedule(e)
		l.unindex(e)
		delete(l.machines, o.key)
		m.machines.Store(int64(len(l.machines)))
		return
	case outcomeStoreError:
		e.deferUntil = now.Add(max(5*time.Second, m.cfg.ScanInterval))
	}
	l.schedule(e, now, false)
}

func (m *Monitor) pendingChecks() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.checkRefs) > 0
}

// check resolves, in the background, the credentials of the machines this
// replica read last (all of them when the periodic check is due, or those
// whose refs CredentialsChanged named).
func (l *loop) check(now time.Time) {
	m := l.m
	m.mu.Lock()
	only := m.checkRefs
	m.checkRefs = map[string]bool{}
	m.mu.Unlock()
	periodic := !l.nextCheck.IsZero() && !now.Before(l.nextCheck)
	if periodic {
		only = nil
		l.nextCheck = now.Add(m.cfg.CredentialsCheckInterval)
	}
	refs := map[string]bool{}
	for _, e := range l.machines {
		if l.checkable(e) && (only == nil || only[e.rec.CredentialsRef]) {
			refs[e.rec.CredentialsRef] = true
		}
	}
	if len(refs) == 0 {
		return
	}
	l.checking = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		hashes := make(map[string]string, len(refs))
		for ref := range refs {
			ctx, cancel := context.WithTimeout(l.ctx, m.cfg.ReadTimeout)
			creds, err := m.cfg.Credentials.Resolve(ctx, ref)
			cancel()
			if l.ctx.Err() != nil {
				return
			}
			hashes[ref] = credsHash(creds, err)
		}
		select {
		case l.checks <- hashes:
		case <-l.ctx.Done():
		}
	}()
}

// checkable: this replica made the last read of e, so it alone knows which
// credentials that read used (no hash of a secret is ever stored).
func (l *loop) checkable(e *entry) bool {
	return !e.running && e.lastHash != "" && e.rec.Refresh.Owner == l.m.cfg.Owner && e.rec.Refresh.Seq == e.lastSeq
}

// checked reads at once the machines whose credentials changed.
func (l *loop) checked(hashes map[string]string) {
	l.checking = false
	now := l.m.cfg.Clock.Now()
	for _, e := range l.machines {
		h, ok := hashes[e.rec.CredentialsRef]
		if ok && l.checkable(e) && h != e.lastHash {
			l.m.log.V(1).Info("credentials changed; reading at once", "system", e.rec.System, "credentialsRef", e.rec.CredentialsRef)
			e.force = true
			l.schedule(e, now, false)
		}
	}
}
