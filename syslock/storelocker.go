package syslock

import (
	"context"
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
	// controller's job renews it on every Step, so it only bounds how long a
	// job whose controller stopped calling Step (an object deleted without
	// Stepper.Release) keeps its system. Defaults to 5 minutes.
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
	// processes; a process restarted with the same Owner (a pod name) takes
	// its own locks back at once. Defaults to host-pid-random.
	Owner string
	// Clock defaults to the wall clock.
	Clock clock.Clock
}

// StoreLocker is a [Locker] over any storage.Store, with the Runner's
// lock records (so a Runner and controllers sharing a Store exclude each
// other). A lock names the job (holder) and the process acting for it
// (StoreLockerConfig.Owner). Another process continues the same job, and
// another job takes the system, only after the lock was seen unchanged for
// a whole LeaseDuration by the taker's own clock; by then the previous
// owner's fence has lapsed (a sixth of a lease earlier, by its clock).
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
		cfg.LeaseDuration = 5 * time.Minute
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultNamespace
	}
	if cfg.Owner == "" {
		cfg.Owner = owner.Default()
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
// the system anew (it was free, released, or another process's) rather
// than renewing this process's live lock for holder.
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
	renewal := cur.Holder == holder && cur.Owner == l.owner && l.t.Ours(cur)
	n, err := l.t.Write(ctx, system, Record{Holder: holder, Owner: l.owner}, rev, l.lease)
	if LostRace(err) {
		return 0, false, &BusyError{System: system, Holder: "(changed meanwhile)"}
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
// owner) by a holder of this namespace, already this process's for holder,
// or its lease was seen unchanged for a whole lease. A released lock of
// another namespace, whose holder only its own writers resume, must expire
// too.
func (l *StoreLocker) busy(system string, cur Record, rev int64, holder string) error {
	switch {
	case cur.Holder == "":
		return nil
	case cur.Holder == holder && cur.Owner == l.owner && l.t.Ours(cur):
		return nil
	case cur.Owner == "" && l.t.Ours(cur) && cur.Holder == holder:
		return nil
	case cur.Owner == "" && l.t.Ours(cur):
		// Released with another job unfinished: that job goes first, as
		// on the Runner's path; it is stepped by its own controller.
		if !l.t.Expired(system, cur, rev) {
			return &BusyError{System: system, Holder: cur.Holder}
		}
		return nil
	case l.t.Expired(system, cur, rev):
		return nil
	}
	return &BusyError{System: system, Holder: cur.Holder, Owner: cur.Owner}
}

// Unlock implements Locker.
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
		if gojson.Unmarshal(cur.Value, &rec) == nil && (rec.Holder != holder || !l.t.Ours(rec) || rec.Owner != l.owner && rec.Owner != "") {
			// Another job's, another namespace's, or the same job's
			// under another process (which is acting for it now).
			return nil, storage.ErrNoChange
		}
		return gojson.Marshal(Record{})
	})
	return err
}
