// Package locksweep deletes the system locks a job package Runner's Owner
// left behind for jobs that completed, or no longer exist.
//
// A runner that died between a job's completion write and its lock's
// delete leaves such a lock, and so does one whose store was down when it
// stopped. Nothing else would delete it: no job is queued for the system,
// and a claim only looks at a lock when one is. Left alone, it stays in the
// store, and a runner with another Owner waits a whole lease before it
// takes the system for its next job. A runner restarted with the same Owner
// knows such a lock is its own and stale.
//
// Locks of unfinished jobs stay: those jobs are resumed first (the Runner's
// claim). So do the locks of the systems the Runner holds now ([Sweeper.Hold]):
// a job of theirs that just completed is being handed over or released by
// the Runner's loop (a sweep that deleted it first made the handover fail
// and the system be claimed again: TestHandOverQueuedJobs failed 1 run in
// 60).
//
// The sweep runs beside the loop ([Sweeper.Run]): every delete is a
// compare-and-swap on the revision listed, so a claim, renewal or handover
// that rewrote the lock meanwhile wins; a lock this deletes under a
// handover or a release in flight makes that write fail as lost, and the
// system is claimed again the usual way. Only locks whose holder has
// completed are deleted, and a completed job sends nothing more to its BMC.
package locksweep

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/job/internal/fanout"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// every is how many leases apart Run sweeps after its first two sweeps.
const every = 10

// Config configures a Sweeper: the Runner's.
type Config struct {
	Store storage.Store
	// Locks is the Runner's lock table: a lock is swept only if its holder
	// is a job of the table's namespace (Table.Ours).
	Locks *syslock.Table
	// Owner is the Runner's Owner: only its locks are swept.
	Owner string
	Lease time.Duration
	Clock clock.Clock
	Log   logr.Logger
	// Unfinished reports whether job exists (in the Runner's namespace) and
	// has not completed.
	Unfinished func(ctx context.Context, job string) (bool, error)
}

// Sweeper sweeps one Runner's stale locks. Safe for concurrent use.
type Sweeper struct {
	cfg Config

	// holding has the systems the Runner's loop holds or is handing over,
	// whose locks the sweep leaves alone. (A map under a lock: sync.Map
	// allocated twice per job.)
	mu      sync.Mutex
	holding map[string]struct{}
}

// New returns the Sweeper of the Runner cfg describes.
func New(cfg Config) *Sweeper {
	return &Sweeper{cfg: cfg, holding: map[string]struct{}{}}
}

// Hold tells the sweeper that the Runner holds (or is handing over) sys:
// its lock is not swept until Drop.
func (s *Sweeper) Hold(sys string) {
	s.mu.Lock()
	s.holding[sys] = struct{}{}
	s.mu.Unlock()
}

// Drop tells the sweeper that the Runner no longer holds sys.
func (s *Sweeper) Drop(sys string) {
	s.mu.Lock()
	delete(s.holding, sys)
	s.mu.Unlock()
}

// holdsKey reports whether the lock at key is of a system the Runner holds
// or hands over now.
func (s *Sweeper) holdsKey(key string) bool {
	sys, err := url.PathUnescape(strings.TrimPrefix(key, syslock.KeyPrefix))
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.holding[sys]
	return ok
}

// Run sweeps at once (the Runner's Start); again a lease later, because a
// write the previous process sent before it died (a completion) may land
// after this one started; and then every 10 leases, for the releases that
// gave up during a store outage. It returns when ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	s.Sweep(ctx)
	wait := s.cfg.Lease
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.Clock.After(wait):
		}
		s.Sweep(ctx)
		wait = every * s.cfg.Lease
	}
}

// Sweep deletes the stale locks of the Runner's Owner once: those whose
// holder completed or no longer exists, of systems the Runner does not
// hold. The first error is logged and ends the sweep until the next one.
// It returns how many locks it deleted.
func (s *Sweeper) Sweep(ctx context.Context) int {
	cfg := &s.cfg
	recs, err := cfg.Store.List(ctx, syslock.KeyPrefix)
	if err != nil {
		if ctx.Err() == nil {
			cfg.Log.Error(err, "listing system locks to clear this runner's stale ones failed; will try again later")
		}
		return 0
	}
	// This runner's locks (its Owner, its namespace), each with its holder.
	own := recs[:0]
	var holders []string
	for _, rec := range recs {
		var l syslock.Record
		if gojson.Unmarshal(rec.Value, &l) == nil && l.Owner == cfg.Owner && l.Holder != "" && cfg.Locks.Ours(l) && !s.holdsKey(rec.Key) {
			own = append(own, rec)
			holders = append(holders, l.Holder)
		}
	}
	// fanout.Limit at once, as releases go: after a crash there may be
	// thousands, and one at a time a durable store commits each alone.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	fail := func(err error, msg string, kv ...any) {
		once.Do(func() {
			if ctx.Err() == nil {
				cfg.Log.Error(err, msg, kv...)
			}
			cancel() // the first error ends the sweep
		})
	}
	var deleted atomic.Int64
	fanout.Do(len(own), func(i int) {
		rec, holder := own[i], holders[i]
		if sctx.Err() != nil {
			return // ended by an error
		}
		unfinished, err := cfg.Unfinished(sctx, holder)
		if err != nil {
			fail(err, "reading a lock holder's job failed; the sweep of stale locks stops until the next one", "key", rec.Key, "job", holder)
			return
		}
		if unfinished || s.holdsKey(rec.Key) {
			// Checked again here: the loop may have claimed the system
			// since the list (its claim writes the lock first).
			return
		}
		switch err := cfg.Store.Delete(sctx, rec.Key, rec.Revision); {
		case err == nil:
			deleted.Add(1)
		case syslock.LostRace(err):
		default:
			fail(err, "deleting a stale system lock failed; the sweep stops until the next one", "key", rec.Key, "job", holder)
		}
	})
	n := int(deleted.Load())
	if n > 0 {
		cfg.Log.Info("deleted system locks this runner's Owner left behind for completed jobs", "locks", n)
	}
	return n
}
