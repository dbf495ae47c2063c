package job

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// This file shares the claimable systems among the Runner replicas on one
// Store (docs/jobs.md, "Replicas share the fleet"). Each Runner keeps a
// heartbeat record, <KeyPrefix>runners/<Owner>, rewritten with its lock
// renewals. It counts the live replicas by listing those records and judging
// each by observation on its own clock, as locks are judged
// (lockTable.expired): a record seen unchanged for its whole lease is dead.
// A runner claims no more than its share of the systems with unfinished jobs
// (shareOf), and one that holds more gives systems back when their jobs
// complete (loop.drop), never mid-job, while another live replica has room.

// runnerRecord is a Runner's heartbeat, stored as JSON under
// <KeyPrefix>runners/<escaped Owner>.
type runnerRecord struct {
	// Held is how many systems the runner held when it wrote the record.
	Held int `json:"held"`
	// LeaseMillis is the writer's lease length. The record is dead for an
	// observer that saw it unchanged (same revision) that long by its own
	// clock.
	LeaseMillis int64 `json:"leaseMillis"`
	// Expires is the writer's wall-clock time plus the lease, for people
	// reading the record; never compared with another replica's clock.
	Expires time.Time `json:"expires,omitzero"`
}

// shareOf is how many of claimable systems one of live replicas may hold:
// its fair part rounded up, plus a slack of a tenth of it (at least one
// system). The slack leaves room in the sum of the shares, so a system that
// a replica gives back always finds a taker although the replicas' counts of
// the claimable systems differ by what each saw since its last scan; and it
// keeps a replica from giving systems back for such small differences. A
// dead replica held at most 1.1/live of the fleet.
func shareOf(claimable, live int) int {
	live = max(live, 1)
	fair := (claimable + live - 1) / live
	return fair + max(1, fair/10)
}

// peers is a Runner's heartbeat and its view of the other live replicas.
type peers struct {
	r      *Runner
	prefix string // <KeyPrefix>runners/
	key    string // this runner's record

	busy atomic.Bool // a heartbeat or a listing is in flight

	mu     sync.Mutex
	rev    int64               // this runner's record's revision; 0: to create
	seen   map[string]peerSeen // the other runners' records, by key
	others []int               // how many systems each live other runner holds, as last listed
	live   []string            // the live runners' record keys, this one's included (prefer)
	// free holds the systems a watch found takeable (no lock, a released
	// one, or an expired lease), with when it first found them so.
	free map[string]time.Time
	// found are the systems the last watch found takeable (claimAgain).
	found     []string
	writeErrs int
	listErrs  int

	// Used by the loop's goroutine only.
	writeDue  bool      // a heartbeat came due while a listing was in flight
	nextList  time.Time // when to list the records again (tick)
	fastUntil time.Time // list every fastList until then: the first lease
	cands     []string  // scratch for loop.claim
	// hinted are systems whose job another replica just completed, with
	// more jobs queued: it may have given them back (completedElsewhere).
	hinted map[string]struct{}
}

// peerSeen is what this runner saw of another runner's record.
type peerSeen struct {
	rev int64
	at  time.Time // when rev was first seen, by this runner's clock
}

func newPeers(r *Runner) *peers {
	prefix := r.cfg.KeyPrefix + "runners/"
	return &peers{r: r, prefix: prefix, key: prefix + url.PathEscape(r.cfg.Owner), seen: map[string]peerSeen{}, free: map[string]time.Time{},
		hinted: map[string]struct{}{}}
}

// fastList is how often the records are listed while other replicas are
// alive (and in the first lease after Start): so a dead replica stops
// counting within about this much after its lease, as its locks expire.
func (p *peers) fastList() time.Duration {
	return max(p.r.cfg.ScanInterval, p.r.cfg.LeaseDuration/30)
}

// start writes this runner's record and lists the others', before the first
// claim, so a runner that starts next to live ones claims only its share.
// A failure is logged; the heartbeats retry. Its store calls share a
// deadline, as the loop's do (storeCallTimeout).
func (p *peers) start(ctx context.Context) {
	now := p.r.cfg.Clock.Now()
	p.fastUntil = now.Add(p.r.cfg.LeaseDuration)
	p.nextList = now.Add(p.fastList())
	ctx, cancel := context.WithTimeout(ctx, p.r.storeCallTimeout())
	defer cancel()
	p.beat(ctx, 0, true)
}

// stop deletes this runner's record (Start's return): the others stop
// counting it at once. One try, bounded: a record left behind is judged
// dead a lease later and deleted by whoever sees that.
func (p *peers) stop(ctx context.Context) {
	p.mu.Lock()
	rev := p.rev
	p.mu.Unlock()
	if rev == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syslock.Margin(p.r.cfg.LeaseDuration))
	defer cancel()
	if err := p.r.cfg.Store.Delete(ctx, p.key, rev); err != nil && !syslock.LostRace(err) {
		p.r.log.Error(err, "deleting this runner's heartbeat record failed; the other replicas drop it a lease from now", "key", p.key)
	}
}

// heartbeat writes this runner's record and lists the others' in the
// background (with the lock renewals, every LeaseDuration/3).
func (l *loop) heartbeat() {
	p := l.r.peers
	if !p.busy.CompareAndSwap(false, true) {
		p.writeDue = true // a listing is in flight: write at the next tick
		return
	}
	p.writeDue = false
	l.launchBeat(true)
}

// tick lists the other runners' records again when due, from each claim
// round: every fastList while others are alive or in the first lease, and
// otherwise only with the heartbeat. A lone runner lists every
// LeaseDuration/3.
func (l *loop) tick(now time.Time) {
	p := l.r.peers
	if p.writeDue {
		if p.busy.CompareAndSwap(false, true) {
			p.writeDue = false
			l.launchBeat(true)
		}
		return
	}
	if now.Before(p.nextList) {
		return
	}
	p.mu.Lock()
	alone := len(p.others) == 0
	if len(p.free) > 2*len(l.r.queue.bySys)+64 {
		for sys := range p.free { // systems that left the queue
			if len(l.r.queue.bySys[sys]) == 0 {
				delete(p.free, sys)
			}
		}
	}
	p.mu.Unlock()
	if alone && !now.Before(p.fastUntil) {
		p.nextList = now.Add(l.r.cfg.LeaseDuration / 3)
		return
	}
	if p.busy.CompareAndSwap(false, true) {
		l.launchBeat(false)
	}
}

// launchBeat runs one heartbeat (write, then list) or listing in the
// background; p.busy is set.
func (l *loop) launchBeat(write bool) {
	p := l.r.peers
	held := len(l.held) + len(l.handing)
	p.nextList = l.r.cfg.Clock.Now().Add(p.fastList())
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer p.busy.Store(false)
		ctx, cancel := context.WithTimeout(l.ctx, l.r.storeCallTimeout())
		defer cancel()
		p.beat(ctx, held, write)
	}()
}

// beat writes this runner's record saying it holds held systems (when
// write), then lists every runner's record and counts the live ones.
func (p *peers) beat(ctx context.Context, held int, write bool) {
	if write {
		err := p.write(ctx, held)
		p.mu.Lock()
		if err == nil {
			p.writeErrs = 0
		} else {
			p.writeErrs++
		}
		n := p.writeErrs
		p.mu.Unlock()
		if err != nil && ctx.Err() == nil && n == 1 {
			p.r.log.Error(err, "writing this runner's heartbeat record failed; will retry with the next lock renewal", "key", p.key)
		}
	}
	err := p.list(ctx)
	p.mu.Lock()
	if err == nil {
		p.listErrs = 0
	} else {
		p.listErrs++
	}
	n := p.listErrs
	p.mu.Unlock()
	if err != nil && ctx.Err() == nil && n == 1 {
		p.r.log.Error(err, "listing the runners' heartbeat records failed; counting the replicas as last seen", "prefix", p.prefix)
	}
}

// write stores this runner's record by compare-and-swap on the revision it
// last wrote. A record found under this Owner (a previous process of this
// runner) is taken over at its revision, and one that another replica
// deleted as dead (this runner was paused for a lease) is created again.
func (p *peers) write(ctx context.Context, held int) error {
	r := p.r
	lease := r.cfg.LeaseDuration
	data, err := marshalRecord(runnerRecord{Held: held, LeaseMillis: lease.Milliseconds(),
		Expires: r.cfg.Clock.Now().Add(lease).UTC().Truncate(time.Millisecond)})
	if err != nil {
		return err
	}
	p.mu.Lock()
	rev := p.rev
	p.mu.Unlock()
	for try := 0; ; try++ {
		var n int64
		if rev == 0 {
			n, err = r.cfg.Store.Create(ctx, p.key, data)
		} else {
			n, err = r.cfg.Store.Update(ctx, p.key, data, rev)
		}
		if err == nil {
			p.mu.Lock()
			p.rev = n
			p.mu.Unlock()
			return nil
		}
		if !syslock.LostRace(err) || try == 2 {
			return err
		}
		rec, gerr := r.cfg.Store.Get(ctx, p.key)
		switch {
		case errors.Is(gerr, storage.ErrNotFound):
			rev = 0
		case gerr != nil:
			return gerr
		default:
			rev = rec.Revision
		}
	}
}

// list reads every runner's record and counts the live others: a record is
// live until this runner has seen it unchanged for its whole lease by its
// own clock (the first sighting of a revision starts the count, so a
// runner that just started counts every record for a lease). Dead records
// are deleted by compare-and-swap on the revision seen.
func (p *peers) list(ctx context.Context) error {
	r := p.r
	recs, err := r.cfg.Store.List(ctx, p.prefix)
	if err != nil {
		return err
	}
	now := r.cfg.Clock.Now()
	var dead []storage.Record
	p.mu.Lock()
	seen := make(map[string]peerSeen, len(recs))
	others := make([]int, 0, len(recs))
	live := []string{p.key}
	for _, rec := range recs {
		if rec.Key == p.key {
			continue
		}
		var rr runnerRecord
		if unmarshalRecord(rec.Value, &rr) != nil {
			continue // not a heartbeat this version can count
		}
		lease := time.Duration(rr.LeaseMillis) * time.Millisecond
		if lease <= 0 {
			lease = r.cfg.LeaseDuration
		}
		o, ok := p.seen[rec.Key]
		if !ok || o.rev != rec.Revision {
			o = peerSeen{rev: rec.Revision, at: now}
		}
		seen[rec.Key] = o
		if now.Sub(o.at) >= lease {
			dead = append(dead, rec)
			continue
		}
		others = append(others, max(rr.Held, 0))
		live = append(live, rec.Key)
	}
	p.seen, p.others, p.live = seen, others, live
	p.mu.Unlock()
	for _, rec := range dead {
		// Another replica may delete it first; a runner that was only
		// paused writes its record again.
		err := r.cfg.Store.Delete(ctx, rec.Key, rec.Revision)
		if err == nil {
			r.log.Info("deleted the heartbeat record of a runner not seen alive for a lease", "key", rec.Key)
		}
	}
	return nil
}

// share is this runner's share of claimable systems.
func (p *peers) share(claimable int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return shareOf(claimable, 1+len(p.others))
}

// giveBack reports whether a runner holding held systems (counting the one
// whose job just completed) gives that one back instead of passing it to
// the system's next job: it holds more than its share, and another live
// replica had room when it last wrote its record.
func (p *peers) giveBack(held, claimable int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	share := shareOf(claimable, 1+len(p.others))
	if held <= share {
		return false
	}
	for _, h := range p.others {
		if h < share {
			return true
		}
	}
	return false
}

// overdue reports whether sys has been seen takeable for a whole lease
// (nobody with room took it): it is claimed whatever the share, so a
// replica that counts as alive but does not claim (another Store view,
// its endpoints at their limit) cannot leave a system waiting.
func (p *peers) overdue(sys string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.free[sys]
	return ok && now.Sub(at) >= p.r.cfg.LeaseDuration
}

// claimAgain starts the next claim round at once, instead of at the next
// scan, when the watch of the round that just ended found systems takeable
// and this runner has room for them: a system another replica gave back is
// taken within milliseconds of being found free, not a ScanInterval later.
// (bench/fleet -replicas 3 -jobs-per-system 3: the given-back systems
// waited up to 4 s in 1 s rounds whose claims were partly spent on systems
// still held.) A round that finds nothing new ends the sequence.
func (l *loop) claimAgain() {
	p := l.r.peers
	p.mu.Lock()
	found := p.found
	p.found = nil
	p.mu.Unlock()
	if len(found) == 0 || l.claiming || l.ctx.Err() != nil {
		return
	}
	if p.share(len(l.r.queue.bySys))-len(l.held)-len(l.handing) <= 0 {
		return
	}
	again := false
	for _, sys := range found {
		if l.held[sys] == nil && !l.handing[sys] && len(l.r.queue.bySys[sys]) > 0 {
			if _, ok := l.r.queue.free[sys]; ok {
				delete(l.retryAt, sys)
				again = true
			}
		}
	}
	if again {
		l.claim()
	}
}

// completedElsewhere notes that another replica completed job name (the
// scan saw its completion): if its system has more jobs queued and this
// runner does not hold it, the other replica may have given it back (it
// deletes the lock right after the completion write), so the claim round of
// this scan looks at it at once, first among the systems not found free
// yet, instead of at its next retry. A handed-over system costs that round
// one failed claim or watch read.
func (l *loop) completedElsewhere(name string) {
	e := l.r.queue.jobs[name]
	if e == nil || e.sys == "" || l.held[e.sys] != nil || l.handing[e.sys] || len(l.r.queue.bySys[e.sys]) < 2 {
		return
	}
	delete(l.retryAt, e.sys)
	l.r.queue.free[e.sys] = struct{}{}
	l.r.peers.hinted[e.sys] = struct{}{}
}

// prefer orders systems to claim when the share allows fewer than all of
// them: those a watch found takeable first (longest first), then those whose
// job another replica just completed (completedElsewhere), then those whose
// lock this runner never saw held (most likely free), then the rest;
// within each, first the systems that rendezvous hashing over the live
// runners gives to this one. Replicas that start together, or whose shares
// all grew at one death, so try mostly different systems: with the same
// order for all (or a random one), their claim rounds collided, and each
// round lost to a collision waited a ScanInterval (bench/fleet -replicas 3,
// 1,000 systems: 7 s to claim them all instead of 1.4 s).
func (p *peers) prefer(systems []string) {
	type ranked struct {
		sys  string
		rank int // 0: found takeable, 1: hinted, 2: never seen held, 3: the rest; +4: another runner's by hashing
		at   time.Time
	}
	rs := make([]ranked, len(systems))
	p.mu.Lock()
	for i, sys := range systems {
		rs[i] = ranked{sys: sys, rank: 3}
		if at, ok := p.free[sys]; ok {
			rs[i].rank, rs[i].at = 0, at
		} else if _, ok := p.hinted[sys]; ok {
			rs[i].rank = 1
		} else if !p.r.locks.Observed(sys) {
			rs[i].rank = 2
		}
		if !p.mine(sys) {
			rs[i].rank += 4
		}
	}
	p.mu.Unlock()
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return a.at.Compare(b.at)
	})
	for i := range rs {
		systems[i] = rs[i].sys
	}
}

// mine reports whether rendezvous hashing over the live runners' records
// gives sys to this runner: a preference only, never an assignment. p.mu is
// held.
func (p *peers) mine(sys string) bool {
	if len(p.live) <= 1 {
		return true
	}
	best, winner := uint64(0), ""
	for _, k := range p.live {
		if h := rendezvous(k, sys); h > best || winner == "" {
			best, winner = h, k
		}
	}
	return winner == p.key
}

// rendezvous is the weight of runner record key for system sys: FNV-1a over
// both, with a 64-bit finalizer so that similar names spread.
func rendezvous(key, sys string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	h = (h ^ 0xff) * 1099511628211
	for i := 0; i < len(sys); i++ {
		h = (h ^ uint64(sys[i])) * 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// forget drops what a watch found about sys (it is held now, or has no
// jobs).
func (p *peers) forget(sys string) {
	p.mu.Lock()
	delete(p.free, sys)
	p.mu.Unlock()
}

// watch reads the locks of systems this runner may not claim now (its
// share is full), without writing: it keeps the lease observation of each
// running (lockTable.expired), so a lock found expired once the share grows
// (a dead replica stopped counting) is taken at once instead of a lease
// later, and it notes which systems are takeable (prefer, overdue). It
// costs what a failed claim of them would: one Get each.
func (p *peers) watch(ctx context.Context, systems []string) {
	r := p.r
	fanOut(len(systems), func(i int) {
		sys := systems[i]
		cur, rev, err := r.locks.Read(ctx, sys)
		if err != nil {
			return
		}
		takeable := r.takeable(sys, cur, rev) // Runner.claim's rules, without the write
		now := r.cfg.Clock.Now()
		p.mu.Lock()
		if _, ok := p.free[sys]; takeable && !ok {
			p.free[sys] = now
		} else if !takeable {
			delete(p.free, sys)
		}
		if takeable {
			p.found = append(p.found, sys)
		}
		p.mu.Unlock()
	})
}
