package job

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
)

// ErrSystemBusy is returned (wrapped in a [*BusyError]) by a [SystemLocker]
// when another job holds the system.
var ErrSystemBusy = errors.New("job: system held by another job")

// BusyError says which job holds a system.
type BusyError struct {
	System string
	Holder string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("system %s is held by job %q", e.System, e.Holder)
}

// Unwrap returns ErrSystemBusy.
func (e *BusyError) Unwrap() error { return ErrSystemBusy }

// SystemLocker keeps two jobs from acting on one system at the same time on
// the controller path (StepperConfig.Locks). A system is named by
// [bmc.Endpoint.SystemKey]; a holder is a job's Name. Implementations must be
// safe for concurrent use, across processes where the host runs several.
// [NewStoreLocker] implements it over any storage.Store; a Kubernetes
// Lease-backed implementation fits the same two methods.
type SystemLocker interface {
	// Lock takes system for holder, or renews it if holder has it already,
	// and returns how long holder may act on the system from now, by the
	// caller's own clock (the caller bounds its BMC calls by it). It returns
	// an error wrapping ErrSystemBusy when another holder has the system.
	// Idempotent.
	Lock(ctx context.Context, system, holder string) (time.Duration, error)

	// Unlock frees system if holder has it; otherwise it does nothing.
	// Idempotent.
	Unlock(ctx context.Context, system, holder string) error
}

// lockRecord is a system's lock, stored as JSON under
// <prefix>systems/<escaped SystemKey>. See docs/jobs.md, "Scheduling".
type lockRecord struct {
	// Holder is the job that owns the system until it completed.
	Holder string `json:"holder,omitempty"`
	// Owner is who may act now: a runner's Owner name, or on the controller
	// path the holder itself. Empty: the lease was released (a clean stop)
	// and the next taker resumes Holder at once.
	Owner string `json:"owner,omitempty"`
	// LeaseMillis is the lease's length. A lease is expired for an observer
	// that saw the record unchanged (same revision) for that long by its own
	// clock; the writer's wall-clock Expires is for people reading the
	// record, never compared with another replica's clock.
	LeaseMillis int64     `json:"leaseMillis,omitempty"`
	Expires     time.Time `json:"expires,omitzero"`
}

// lockTable reads and writes lock records and judges lease expiry by
// observation.
type lockTable struct {
	store  storage.Store
	prefix string // <KeyPrefix>systems/
	clock  Clock

	mu   sync.Mutex
	seen map[string]observation
}

type observation struct {
	rev int64
	at  time.Time
}

func newLockTable(s storage.Store, keyPrefix string, clock Clock) *lockTable {
	return &lockTable{store: s, prefix: keyPrefix + "systems/", clock: clock, seen: map[string]observation{}}
}

func (t *lockTable) key(system string) string { return t.prefix + url.PathEscape(system) }

// read returns the system's lock record and its revision (0 when absent).
func (t *lockTable) read(ctx context.Context, system string) (lockRecord, int64, error) {
	rec, err := t.store.Get(ctx, t.key(system))
	if errors.Is(err, storage.ErrNotFound) {
		t.forget(system)
		return lockRecord{}, 0, nil
	}
	if err != nil {
		return lockRecord{}, 0, err
	}
	var l lockRecord
	if err := unmarshalRecord(rec.Value, &l); err != nil {
		// An undecodable lock protects nothing we can name: treat it as
		// free, but only through a compare-and-swap on its revision.
		return lockRecord{}, rec.Revision, nil
	}
	return l, rec.Revision, nil
}

// expired reports whether the lease at revision rev has been observed
// unchanged for its whole length, by this process's clock. The first
// observation of a revision starts the count.
func (t *lockTable) expired(system string, l lockRecord, rev int64) bool {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.seen[system]
	if !ok || o.rev != rev {
		t.seen[system] = observation{rev: rev, at: now}
		return false
	}
	return now.Sub(o.at) >= time.Duration(l.LeaseMillis)*time.Millisecond
}

// observed reports whether this process has seen system's lock held by
// someone (its expiry count is running).
func (t *lockTable) observed(system string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.seen[system]
	return ok
}

func (t *lockTable) forget(system string) {
	t.mu.Lock()
	delete(t.seen, system)
	t.mu.Unlock()
}

// write stores l for system by compare-and-swap on rev (Create when rev is
// 0) and returns the new revision; ErrConflict, ErrExists and ErrNotFound
// mean someone else wrote first.
func (t *lockTable) write(ctx context.Context, system string, l lockRecord, rev int64, lease time.Duration) (int64, error) {
	l.LeaseMillis = lease.Milliseconds()
	l.Expires = t.clock.Now().Add(lease).UTC().Truncate(time.Millisecond)
	data, err := marshalRecord(l)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return t.store.Create(ctx, t.key(system), data)
	}
	return t.store.Update(ctx, t.key(system), data, rev)
}

// lostRace reports whether err means another writer changed the record
// between our read and our write.
func lostRace(err error) bool {
	return errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrNotFound)
}

// StoreLockerConfig configures [NewStoreLocker]. Zero values mean defaults.
type StoreLockerConfig struct {
	// LeaseDuration is how long a lock lasts without a Step renewing it. A
	// controller's job renews it on every Step, so it only bounds how long a
	// job whose controller stopped calling Step (an object deleted without
	// Stepper.Release) keeps its system. Defaults to 5 minutes.
	LeaseDuration time.Duration
	// KeyPrefix must match the Runner's Config.KeyPrefix when Runners and
	// controllers share a Store. Defaults to "bmckit/".
	KeyPrefix string
	// Clock defaults to the wall clock.
	Clock Clock
}

// StoreLocker is a [SystemLocker] over any storage.Store, with the Runner's
// lock records (so a Runner and controllers sharing a Store exclude each
// other). The holder is also the lease's owner: any replica of a controller
// may continue the job. Another holder takes the system over only after it
// saw the lock unchanged for a whole LeaseDuration by its own clock.
type StoreLocker struct {
	t     *lockTable
	lease time.Duration

	mu    sync.Mutex
	valid map[string]heldLock // system -> our last renewal
}

type heldLock struct {
	holder string
	rev    int64
	until  time.Time // sent + lease - margin, by our clock
}

var _ SystemLocker = (*StoreLocker)(nil)

// NewStoreLocker returns a StoreLocker over s.
func NewStoreLocker(s storage.Store, cfg StoreLockerConfig) *StoreLocker {
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 5 * time.Minute
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "bmckit/"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &StoreLocker{t: newLockTable(s, cfg.KeyPrefix, cfg.Clock), lease: cfg.LeaseDuration, valid: map[string]heldLock{}}
}

// leaseMargin is how much earlier than its length a lease stops being used
// by its holder: slack for clock-rate differences and requests in flight.
func leaseMargin(lease time.Duration) time.Duration { return lease / 6 }

// Lock implements SystemLocker. A lock renewed less than a third of a lease
// ago is not written again.
func (l *StoreLocker) Lock(ctx context.Context, system, holder string) (time.Duration, error) {
	now := l.t.clock.Now()
	l.mu.Lock()
	h, ok := l.valid[system]
	l.mu.Unlock()
	if ok && h.holder == holder && h.until.Sub(now) > l.lease-leaseMargin(l.lease)-l.lease/3 {
		return h.until.Sub(now), nil
	}
	cur, rev, err := l.t.read(ctx, system)
	if err != nil {
		return 0, err
	}
	if cur.Holder != "" && cur.Holder != holder && cur.Owner != "" && !l.t.expired(system, cur, rev) {
		return 0, &BusyError{System: system, Holder: cur.Holder}
	}
	n, err := l.t.write(ctx, system, lockRecord{Holder: holder, Owner: holder}, rev, l.lease)
	if lostRace(err) {
		return 0, &BusyError{System: system, Holder: "(changed meanwhile)"}
	}
	if err != nil {
		return 0, err
	}
	until := now.Add(l.lease - leaseMargin(l.lease))
	l.mu.Lock()
	l.valid[system] = heldLock{holder: holder, rev: n, until: until}
	l.mu.Unlock()
	return until.Sub(now), nil
}

// Unlock implements SystemLocker.
func (l *StoreLocker) Unlock(ctx context.Context, system, holder string) error {
	l.mu.Lock()
	if h, ok := l.valid[system]; ok && h.holder == holder {
		delete(l.valid, system)
	}
	l.mu.Unlock()
	_, err := storage.Modify(ctx, l.t.store, l.t.key(system), func(cur *storage.Record) ([]byte, error) {
		if cur == nil {
			return nil, storage.ErrNoChange
		}
		var rec lockRecord
		if unmarshalRecord(cur.Value, &rec) == nil && rec.Holder != holder {
			return nil, storage.ErrNoChange
		}
		return marshalRecord(lockRecord{})
	})
	return err
}
