package syslock

import (
	"context"
	"fmt"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/internal/owner"
	"github.com/bmckit/bmckit/storage"
)

// StoreLockerConfig configures [NewStoreLocker]. Zero values mean defaults.
type StoreLockerConfig struct {
	// LeaseDuration is how long a lock lasts without a Step renewing it. A
	// controller's job renews it on a Step once a third of it has passed
	// (one store write per job every LeaseDuration/3 while it is stepped:
	// 0.1 writes/s per active job at the default), so it bounds how long a
	// job whose controller stopped calling Step keeps its system, and how
	// long another process (a new leader) waits before it continues the
	// jobs of a process that died. The holder stops acting a sixth of it
	// before its own lease may end, at the request (docs/jobs.md, "The
	// fence"). Defaults to 30 seconds, as job.Config.LeaseDuration; keep
	// it longer than the longest wait between two Steps of a job that
	// holds the system.
	LeaseDuration time.Duration
	// KeyPrefix names the namespace of the holders (the Runner's
	// Config.KeyPrefix when Runners and controllers share a Store). Lock
	// keys do not depend on it: lockers and Runners over one Store exclude
	// each other on a system whatever their prefixes. Defaults to "bmckit/".
	KeyPrefix string
	// Owner names this process in the locks it takes: two processes (two
	// controller replicas) stepping the same job never both pass Lock, and
	// one takes a system over from the other only after the other's lease
	// was seen unchanged for LeaseDuration. It must be unique among live
	// processes: two live processes with the same Owner both pass Lock for
	// one job. A process restarted with the same Owner (the same pod)
	// takes its own locks back at once. Defaults to [DefaultOwner] ($POD_NAME,
	// stable across restarts of a pod, else host-pid-random): give every
	// locker its own Owner when a process runs two. Nor may it equal the Owner of a job Runner sharing the
	// Store (a Runner takes the locks of its own Owner at once, whatever
	// their holder); the Runner's default, host-pid-random, never does.
	Owner string
	// Clock defaults to the wall clock.
	Clock clock.Clock
}

// DefaultOwner is the Owner of a StoreLocker (and of the Kubernetes kit's
// Lease locker) whose config names none: $POD_NAME if set (the downward
// API's metadata.name), with no pid or random part, so that a restarted
// replica takes its own locks back at once instead of waiting a lease for
// itself; else host-pid-random, unique per process (two processes on one
// host must never share an Owner). The job Runner's default Owner is always
// host-pid-random.
func DefaultOwner() string { return owner.Stable() }

// StoreLocker is a [Locker] over any storage.Store, with the Runner's
// lock records (so a Runner and controllers sharing a Store exclude each
// other). A lock names the job (holder) and the process acting for it
// (StoreLockerConfig.Owner). Another process continues the same job, and
// another job takes the system, only after the lock was seen unchanged for
// a whole LeaseDuration by the taker's own clock; by then the previous
// owner's fence has lapsed (a sixth of a lease earlier, by its clock). A
// process with the lock's own Owner continues its holder at once (the
// same replica, restarted). Unlock releases by job, whichever process
// holds the lock (see [Locker]).
type StoreLocker struct {
	t     *Table
	lease time.Duration
	owner string

	mu    sync.Mutex
	valid map[string]heldLock // system -> our last renewal
}

type heldLock struct {
	holder string
	rev    int64
	until  time.Time // sent + lease - margin, by our clock
}

var (
	_ Locker = (*StoreLocker)(nil)
	_ Taker  = (*StoreLocker)(nil)
)

// NewStoreLocker returns a StoreLocker over s.
func NewStoreLocker(s storage.Store, cfg StoreLockerConfig) *StoreLocker {
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultNamespace
	}
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &StoreLocker{t: NewTable(s, cfg.KeyPrefix, cfg.Clock), lease: cfg.LeaseDuration, owner: cfg.Owner, valid: map[string]heldLock{}}
}

// Lock implements Locker. A lock renewed less than a third of a lease
// ago is not written again.
func (l *StoreLocker) Lock(ctx context.Context, system, holder string) (time.Duration, error) {
	d, _, err := l.TakeLock(ctx, system, holder)
	return d, err
}

// TakeLock implements [Taker]: Lock, reporting whether this call took
// the system anew (it was free, released, another process's, or this
// Owner's from a previous process) rather than renewing this process's
// live lock for holder.
func (l *StoreLocker) TakeLock(ctx context.Context, system, holder string) (time.Duration, bool, error) {
	now := l.t.clk.Now()
	l.mu.Lock()
	h, ok := l.valid[system]
	l.mu.Unlock()
	if ok && h.holder == holder && h.until.Sub(now) > l.lease-Margin(l.lease)-l.lease/3 {
		return h.until.Sub(now), false, nil
	}
	cur, rev, err := l.t.Read(ctx, system)
	if err != nil {
		return 0, false, err
	}
	if busy := l.busy(system, cur, rev, holder); busy != nil {
		return 0, false, busy
	}
	// A renewal of this process's own live lock: the record is still the
	// one this process wrote last. The same holder and Owner at another
	// revision is this Owner's previous process (a restart): taken anew.
	renewal := ok && h.holder == holder && h.rev == rev && cur.Holder == holder && cur.Owner == l.owner && l.t.Ours(cur)
	n, err := l.t.Write(ctx, system, Record{Holder: holder, Owner: l.owner}, rev, l.lease)
	if LostRace(err) {
		return 0, false, l.raced(ctx, system, holder)
	}
	if err != nil {
		return 0, false, err
	}
	until := now.Add(l.lease - Margin(l.lease))
	l.mu.Lock()
	l.valid[system] = heldLock{holder: holder, rev: n, until: until}
	l.mu.Unlock()
	return until.Sub(now), !renewal, nil
}

// busy says why holder may not take system's lock cur (at revision rev)
// for this process, or nil if it may: the lock is free, released (no
// owner) by a holder of this namespace, already this Owner's for holder
// (this process's, or its previous process's), or its lease was seen
// unchanged for a whole lease. A released lock of another namespace, whose
// holder only its own writers resume, must expire too.
func (l *StoreLocker) busy(system string, cur Record, rev int64, holder string) *BusyError {
	switch {
	case cur.Holder == "":
		return nil
	case cur.Holder == holder && cur.Owner == l.owner && l.t.Ours(cur):
		return nil
	case cur.Owner == "" && l.t.Ours(cur) && cur.Holder == holder:
		return nil
	case l.t.Expired(system, cur, rev):
		// Released with another job unfinished (that job goes first, as on
		// the Runner's path; it is stepped by its own controller), or
		// another process's live lease: either waits a whole lease.
		return nil
	}
	return l.busyError(system, cur, rev, holder)
}

// busyError describes cur, at revision rev, to holder; the Table has
// observed rev (Expired was called), so Until is known.
func (l *StoreLocker) busyError(system string, cur Record, rev int64, holder string) *BusyError {
	return &BusyError{System: system, Holder: cur.Holder, Owner: cur.Owner,
		SameJob: cur.Holder == holder && l.t.Ours(cur),
		Until:   l.t.Until(system, cur, rev)}
}

// raced is the error of a take that lost its compare-and-swap: it reads the
// record again to name the winner (and starts counting its lease).
func (l *StoreLocker) raced(ctx context.Context, system, holder string) error {
	cur, rev, err := l.t.Read(ctx, system)
	if err != nil || cur.Holder == "" {
		return &BusyError{System: system}
	}
	l.t.Expired(system, cur, rev) // first sight of rev starts the count
	return l.busyError(system, cur, rev, holder)
}

// Unlock implements Locker: it frees system when its lock's holder is
// holder, a job of this locker's namespace, whoever its Owner is (a
// compare-and-swap on the record's revision, re-read when it changed
// meanwhile), and leaves a lock of another job, or of another namespace,
// alone.
func (l *StoreLocker) Unlock(ctx context.Context, system, holder string) error {
	l.mu.Lock()
	if h, ok := l.valid[system]; ok && h.holder == holder {
		delete(l.valid, system)
	}
	l.mu.Unlock()
	_, err := storage.Modify(ctx, l.t.store, l.t.Key(system), func(cur *storage.Record) ([]byte, error) {
		if cur == nil {
			return nil, storage.ErrNoChange
		}
		var rec Record
		if gojson.Unmarshal(cur.Value, &rec) == nil && (rec.Holder != holder || !l.t.Ours(rec)) {
			return nil, storage.ErrNoChange // another job's, or another namespace's
		}
		return gojson.Marshal(Record{})
	})
	if err != nil {
		return fmt.Errorf("unlocking system %s for job %q: %w", system, holder, err)
	}
	return nil
}
