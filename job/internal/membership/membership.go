package membership

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// record is a Runner's heartbeat, stored as JSON under
// <KeyPrefix>runners/<escaped Owner>.
type record struct {
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

// Config configures a View.
type Config struct {
	// Store holds the heartbeat records.
	Store storage.Store
	// Prefix is the records' key prefix (the Runner's <KeyPrefix>runners/).
	Prefix string
	// Owner names this runner; its record is Prefix + url.PathEscape(Owner).
	Owner string
	// Lease is this runner's lease length (the Runner's LeaseDuration).
	Lease time.Duration
	// ScanInterval is the Runner's: the records are listed no more often.
	ScanInterval time.Duration
	Clock        clock.Clock
	Log          logr.Logger
}

// View is a Runner's heartbeat and its view of the other live replicas.
// Heartbeat, Tick, Hint, ClearHints and Prefer are for the Runner's event
// loop only; the rest is safe for concurrent use.
type View struct {
	store  storage.Store
	prefix string // <KeyPrefix>runners/
	key    string // this runner's record
	lease  time.Duration
	scan   time.Duration
	clk    clock.Clock
	log    logr.Logger

	busy atomic.Bool // a heartbeat or a listing is in flight

	mu     sync.Mutex
	rev    int64           // this runner's record's revision; 0: to create
	seen   map[string]seen // the other runners' records, by key
	others []int           // how many systems each live other runner holds, as last listed
	live   []string        // the live runners' record keys, this one's included (Prefer)
	// free holds the systems a watch found takeable (no lock, a released
	// one, or an expired lease), with when it first found them so.
	free map[string]time.Time
	// found are the systems the last watch found takeable (TakeFound).
	found     []string
	writeErrs int
	listErrs  int

	// Used by the loop's goroutine only.
	writeDue  bool      // a heartbeat came due while a listing was in flight
	nextList  time.Time // when to list the records again (Tick)
	fastUntil time.Time // list every fastList until then: the first lease
	// hinted are systems whose job another replica just completed, with
	// more jobs queued: it may have given them back (Hint).
	hinted map[string]struct{}
}

// seen is what this runner saw of another runner's record.
type seen struct {
	rev int64
	at  time.Time // when rev was first seen, by this runner's clock
}

// New returns the View of the runner cfg names. It touches no record
// before Start.
func New(cfg Config) *View {
	return &View{store: cfg.Store, prefix: cfg.Prefix, key: cfg.Prefix + url.PathEscape(cfg.Owner),
		lease: cfg.Lease, scan: cfg.ScanInterval, clk: cfg.Clock, log: cfg.Log,
		seen: map[string]seen{}, free: map[string]time.Time{}, hinted: map[string]struct{}{}}
}

// fastList is how often the records are listed while other replicas are
// alive (and in the first lease after Start): so a dead replica stops
// counting within about this much after its lease, as its locks expire.
func (v *View) fastList() time.Duration {
	return max(v.scan, v.lease/30)
}

// Start writes this runner's record and lists the others', before the first
// claim, so a runner that starts next to live ones claims only its share.
// A failure is logged; the heartbeats retry. Its store calls share ctx's
// deadline.
func (v *View) Start(ctx context.Context) {
	now := v.clk.Now()
	v.fastUntil = now.Add(v.lease)
	v.nextList = now.Add(v.fastList())
	v.beat(ctx, 0, true)
}

// Stop deletes this runner's record (Start's return): the others stop
// counting it at once. One try, bounded: a record left behind is judged
// dead a lease later and deleted by whoever sees that.
func (v *View) Stop(ctx context.Context) {
	v.mu.Lock()
	rev := v.rev
	v.mu.Unlock()
	if rev == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syslock.Margin(v.lease))
	defer cancel()
	if err := v.store.Delete(ctx, v.key, rev); err != nil && !syslock.LostRace(err) {
		v.log.Error(err, "deleting this runner's heartbeat record failed; the other replicas drop it a lease from now", "key", v.key)
	}
}

// Heartbeat is called with the lock renewals (every LeaseDuration/3, more
// often while they fail). It reports whether to launch Beat with write set
// now; while a listing is in flight, the write waits for the next Tick.
func (v *View) Heartbeat() bool {
	if !v.busy.CompareAndSwap(false, true) {
		v.writeDue = true
		return false
	}
	v.writeDue = false
	v.launched()
	return true
}

// Tick is called from each claim round, with the number of claimable
// systems and whether a system is claimable (has jobs queued). It reports
// whether to launch Beat (and whether it writes): a write that came due
// during a listing; otherwise a listing every fastList while others are
// alive or in the first lease, and none between heartbeats for a lone
// runner (which so lists every LeaseDuration/3).
func (v *View) Tick(now time.Time, claimable int, queued func(sys string) bool) (launch, write bool) {
	if v.writeDue {
		if v.busy.CompareAndSwap(false, true) {
			v.writeDue = false
			v.launched()
			return true, true
		}
		return false, false
	}
	if now.Before(v.nextList) {
		return false, false
	}
	v.mu.Lock()
	alone := len(v.others) == 0
	if len(v.free) > 2*claimable+64 {
		for sys := range v.free { // systems that left the queue
			if !queued(sys) {
				delete(v.free, sys)
			}
		}
	}
	v.mu.Unlock()
	if alone && !now.Before(v.fastUntil) {
		v.nextList = now.Add(v.lease / 3)
		return false, false
	}
	if v.busy.CompareAndSwap(false, true) {
		v.launched()
		return true, false
	}
	return false, false
}

// launched notes a Beat launched now.
func (v *View) launched() { v.nextList = v.clk.Now().Add(v.fastList()) }

// Beat is the beat Heartbeat or Tick said to launch, run in the background:
// it writes this runner's record saying it holds held systems (when
// write), then lists every runner's record and counts the live ones.
func (v *View) Beat(ctx context.Context, held int, write bool) {
	defer v.busy.Store(false)
	v.beat(ctx, held, write)
}

func (v *View) beat(ctx context.Context, held int, write bool) {
	if write {
		if err := v.write(ctx, held); v.firstFailure(&v.writeErrs, err) && ctx.Err() == nil {
			v.log.Error(err, "writing this runner's heartbeat record failed; will retry with the next lock renewal", "key", v.key)
		}
	}
	if err := v.list(ctx); v.firstFailure(&v.listErrs, err) && ctx.Err() == nil {
		v.log.Error(err, "listing the runners' heartbeat records failed; counting the replicas as last seen", "prefix", v.prefix)
	}
}

// firstFailure counts err in *errs, a run of failures that a success ends,
// and reports whether err is the run's first failure: the one logged.
func (v *View) firstFailure(errs *int, err error) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err == nil {
		*errs = 0
		return false
	}
	*errs++
	return *errs == 1
}

// write stores this runner's record by compare-and-swap on the revision it
// last wrote. A record found under this Owner (a previous process of this
// runner) is taken over at its revision, and one that another replica
// deleted as dead (this runner was paused for a lease) is created again.
func (v *View) write(ctx context.Context, held int) error {
	data, err := gojson.Marshal(record{Held: held, LeaseMillis: v.lease.Milliseconds(),
		Expires: v.clk.Now().Add(v.lease).UTC().Truncate(time.Millisecond)})
	if err != nil {
		return err
	}
	v.mu.Lock()
	rev := v.rev
	v.mu.Unlock()
	for try := 0; ; try++ {
		var n int64
		if rev == 0 {
			n, err = v.store.Create(ctx, v.key, data)
		} else {
			n, err = v.store.Update(ctx, v.key, data, rev)
		}
		if err == nil {
			v.mu.Lock()
			v.rev = n
			v.mu.Unlock()
			return nil
		}
		if !syslock.LostRace(err) || try == 2 {
			return err
		}
		rec, gerr := v.store.Get(ctx, v.key)
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
func (v *View) list(ctx context.Context) error {
	recs, err := v.store.List(ctx, v.prefix)
	if err != nil {
		return err
	}
	now := v.clk.Now()
	var dead []storage.Record
	v.mu.Lock()
	seenNow := make(map[string]seen, len(recs))
	others := make([]int, 0, len(recs))
	live := []string{v.key}
	for _, rec := range recs {
		if rec.Key == v.key {
			continue
		}
		var rr record
		if gojson.Unmarshal(rec.Value, &rr) != nil {
			continue // not a heartbeat this version can count
		}
		lease := time.Duration(rr.LeaseMillis) * time.Millisecond
		if lease <= 0 {
			lease = v.lease
		}
		o, ok := v.seen[rec.Key]
		if !ok || o.rev != rec.Revision {
			o = seen{rev: rec.Revision, at: now}
		}
		seenNow[rec.Key] = o
		if now.Sub(o.at) >= lease {
			dead = append(dead, rec)
			continue
		}
		others = append(others, max(rr.Held, 0))
		live = append(live, rec.Key)
	}
	v.seen, v.others, v.live = seenNow, others, live
	v.mu.Unlock()
	for _, rec := range dead {
		// Another replica may delete it first; a runner that was only
		// paused writes its record again.
		err := v.store.Delete(ctx, rec.Key, rec.Revision)
		if err == nil {
			v.log.Info("deleted the heartbeat record of a runner not seen alive for a lease", "key", rec.Key)
		}
	}
	return nil
}

// Share is this runner's share of claimable systems.
func (v *View) Share(claimable int) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return shareOf(claimable, 1+len(v.others))
}

// GiveBack reports whether a runner holding held systems (counting the one
// whose job just completed) gives that one back instead of passing it to
// the system's next job: it holds more than its share, and another live
// replica had room when it last wrote its record.
func (v *View) GiveBack(held, claimable int) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	share := shareOf(claimable, 1+len(v.others))
	if held <= share {
		return false
	}
	for _, h := range v.others {
		if h < share {
			return true
		}
	}
	return false
}

// Watched records what a read of sys's lock, made without writing because
// the share is full, found: whether this runner may take it now (Prefer,
// Overdue, TakeFound).
func (v *View) Watched(sys string, takeable bool) {
	now := v.clk.Now()
	v.mu.Lock()
	if _, ok := v.free[sys]; takeable && !ok {
		v.free[sys] = now
	} else if !takeable {
		delete(v.free, sys)
	}
	if takeable {
		v.found = append(v.found, sys)
	}
	v.mu.Unlock()
}

// TakeFound returns, and forgets, the systems the watches since the last
// call found takeable: the Runner starts its next claim round at once when
// it has room for them, instead of at the next scan.
func (v *View) TakeFound() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	found := v.found
	v.found = nil
	return found
}

// Overdue reports whether sys has been seen takeable for a whole lease
// (nobody with room took it): it is claimed whatever the share, so a
// replica that counts as alive but does not claim (another Store view,
// its endpoints at their limit) cannot leave a system waiting.
func (v *View) Overdue(sys string, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	at, ok := v.free[sys]
	return ok && now.Sub(at) >= v.lease
}

// Forget drops what a watch found about sys (it is held now, or has no
// jobs).
func (v *View) Forget(sys string) {
	v.mu.Lock()
	delete(v.free, sys)
	v.mu.Unlock()
}

// Hint notes that another replica just completed a job of sys, which has
// more jobs queued: it may have given sys back (it deletes the lock right
// after the completion write), so Prefer ranks it next after the systems
// found takeable, until ClearHints.
func (v *View) Hint(sys string) { v.hinted[sys] = struct{}{} }

// ClearHints forgets the hints: the claim round that ranked them is done.
func (v *View) ClearHints() { clear(v.hinted) }

// Prefer orders systems to claim when the share allows fewer than all of
// them: those a watch found takeable first (longest first), then those
// hinted, then those whose lock this runner never saw held (seenHeld false:
// most likely free), then the rest; within each, first the systems that
// rendezvous hashing over the live runners gives to this one. Replicas that
// start together, or whose shares all grew at one death, so try mostly
// different systems: with the same order for all (or a random one), their
// claim rounds collided, and each round lost to a collision waited a
// ScanInterval (bench/fleet -replicas 3, 1,000 systems: 7 s to claim them
// all instead of 1.4 s).
func (v *View) Prefer(systems []string, seenHeld func(sys string) bool) {
	type ranked struct {
		sys  string
		rank int // 0: found takeable, 1: hinted, 2: never seen held, 3: the rest; +4: another runner's by hashing
		at   time.Time
	}
	rs := make([]ranked, len(systems))
	v.mu.Lock()
	for i, sys := range systems {
		rs[i] = ranked{sys: sys, rank: 3}
		if at, ok := v.free[sys]; ok {
			rs[i].rank, rs[i].at = 0, at
		} else if _, ok := v.hinted[sys]; ok {
			rs[i].rank = 1
		} else if !seenHeld(sys) {
			rs[i].rank = 2
		}
		if !v.mine(sys) {
			rs[i].rank += 4
		}
	}
	v.mu.Unlock()
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
// gives sys to this runner: a preference only, never an assignment. v.mu is
// held.
func (v *View) mine(sys string) bool {
	if len(v.live) <= 1 {
		return true
	}
	best, winner := uint64(0), ""
	for _, k := range v.live {
		if h := rendezvous(k, sys); h > best || winner == "" {
			best, winner = h, k
		}
	}
	return winner == v.key
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
