package job

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/internal/owner"
	"github.com/bmckit/bmckit/storage"
)

// ErrSystemBusy is returned (wrapped in a [*BusyError]) by a [SystemLocker]
// when another job holds the system.
var ErrSystemBusy = errors.New("job: system held by another job")

// BusyError says which job holds a system, and which process acts for it.
type BusyError struct {
	System string
	Holder string
	// Owner is the process (a Runner's Owner, a StoreLocker's Owner) whose
	// live lease keeps the system; "" when unknown.
	Owner string
}

func (e *BusyError) Error() string {
	if e.Owner != "" {
		return fmt.Sprintf("system %s is held by job %q, acted for by %q", e.System, e.Holder, e.Owner)
	}
	return fmt.Sprintf("system %s is held by job %q", e.System, e.Holder)
}

// Unwrap returns ErrSystemBusy.
func (e *BusyError) Unwrap() error { return ErrSystemBusy }

// SystemLocker keeps two jobs from acting on one system at the same time on
// the controller path (StepperConfig.Locks). A system is named by
// [bmc.Endpoint.SystemKey]; a holder is a job's Name. A lock is held by a
// job *and* by the process acting for it: two processes stepping the same
// job (two controller replicas without leader election) must not both pass.
// Implementations must be safe for concurrent use, across processes where
// the host runs several. [NewStoreLocker] implements it over any
// storage.Store; a Kubernetes Lease-backed implementation fits the same two
// methods (its holder identity names the job and the replica).
type SystemLocker interface {
	// Lock takes system for holder on behalf of this process, or renews it
	// if they have it already, and returns how long they may act on the
	// system, counted from when Lock was called, by the caller's own clock:
	// the Stepper fences every BMC request of the step by it. It returns an
	// error wrapping ErrSystemBusy when another holder, or another process
	// for the same holder, has the system. Idempotent.
	Lock(ctx context.Context, system, holder string) (time.Duration, error)

	// Unlock frees system if holder has it; otherwise it does nothing.
	// Idempotent.
	Unlock(ctx context.Context, system, holder string) error
}

// LockKeyPrefix is where every system lock lives in a Store:
// LockKeyPrefix + url.PathEscape(system). It is the same for every Runner
// and StoreLocker whatever their KeyPrefix, so that two of them sharing a
// Store exclude each other on a system even when they keep their jobs
// apart. A lock names the key prefix of its holder's job (see docs/jobs.md,
// "Exclusivity").
const LockKeyPrefix = "bmckit/systems/"

// defaultKeyPrefix is Config.KeyPrefix's and StoreLockerConfig.KeyPrefix's
// default.
const defaultKeyPrefix = "bmckit/"

// lockRecord is a system's lock, stored as JSON under LockKeyPrefix +
// <escaped SystemKey>. See docs/jobs.md, "Scheduling".
type lockRecord struct {
	// Holder is the job that owns the system until it completed.
	Holder string `json:"holder,omitempty"`
	// Jobs is the key prefix (Config.KeyPrefix) of Holder's namespace;
	// empty for the default "bmckit/". Only writers of that namespace
	// resume Holder; others wait for the lock to be freed or its lease to
	// expire.
	Jobs string `json:"jobs,omitempty"`
	// Owner is who may act now: a runner's Owner name, or on the controller
	// path the StoreLocker's Owner (the process). Empty: the lease was
	// released (a clean stop) and the next taker resumes Holder at once.
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
	store storage.Store
	jobs  string // the writer's KeyPrefix, as lockRecord.Jobs ("" for the default)
	clock Clock

	mu   sync.Mutex
	seen map[string]observation
}

type observation struct {
	rev int64
	at  time.Time
}

func newLockTable(s storage.Store, keyPrefix string, clock Clock) *lockTable {
	if keyPrefix == defaultKeyPrefix {
		keyPrefix = ""
	}
	return &lockTable{store: s, jobs: keyPrefix, clock: clock, seen: map[string]observation{}}
}

func (t *lockTable) key(system string) string { return LockKeyPrefix + url.PathEscape(system) }

// ours reports whether l's holder is a job of this table's namespace.
func (t *lockTable) ours(l lockRecord) bool { return l.Jobs == t.jobs }

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
	if l.Holder != "" {
		l.Jobs = t.jobs
	}
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
	Clock Clock
}

// StoreLocker is a [SystemLocker] over any storage.Store, with the Runner's
// lock records (so a Runner and controllers sharing a Store exclude each
// other). A lock names the job (holder) and the process acting for it
// (StoreLockerConfig.Owner). Another process continues the same job, and
// another job takes the system, only after the lock was seen unchanged for
// a whole LeaseDuration by the taker's own clock; by then the previous
// owner's fence has lapsed (a sixth of a lease earlier, by its clock).
type StoreLocker struct {
	t     *lockTable
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

var _ SystemLocker = (*StoreLocker)(nil)

// NewStoreLocker returns a StoreLocker over s.
func NewStoreLocker(s storage.Store, cfg StoreLockerConfig) *StoreLocker {
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 5 * time.Minute
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = defaultKeyPrefix
	}
	if cfg.Owner == "" {
		cfg.Owner = owner.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &StoreLocker{t: newLockTable(s, cfg.KeyPrefix, cfg.Clock), lease: cfg.LeaseDuration, owner: cfg.Owner, valid: map[string]heldLock{}}
}

// leaseMargin is how much earlier than its length a lease stops being used
// by its holder: slack for clock-rate differences and requests in flight.
func leaseMargin(lease time.Duration) time.Duration { return lease / 6 }

// Lock implements SystemLocker. A lock renewed less than a third of a lease
// ago is not written again.
func (l *StoreLocker) Lock(ctx context.Context, system, holder string) (time.Duration, error) {
	d, _, err := l.TakeLock(ctx, system, holder)
	return d, err
}

// TakeLock implements [LockTaker]: Lock, reporting whether this call took
// the system anew (it was free, released, or another process's) rather
// than renewing this process's live lock for holder.
func (l *StoreLocker) TakeLock(ctx context.Context, system, holder string) (time.Duration, bool, error) {
	now := l.t.clock.Now()
	l.mu.Lock()
	h, ok := l.valid[system]
	l.mu.Unlock()
	if ok && h.holder == holder && h.until.Sub(now) > l.lease-leaseMargin(l.lease)-l.lease/3 {
		return h.until.Sub(now), false, nil
	}
	cur, rev, err := l.t.read(ctx, system)
	if err != nil {
		return 0, false, err
	}
	if busy := l.busy(system, cur, rev, holder); busy != nil {
		return 0, false, busy
	}
	renewal := cur.Holder == holder && cur.Owner == l.owner && l.t.ours(cur)
	n, err := l.t.write(ctx, system, lockRecord{Holder: holder, Owner: l.owner}, rev, l.lease)
	if lostRace(err) {
		return 0, false, &BusyError{System: system, Holder: "(changed meanwhile)"}
	}
	if err != nil {
		return 0, false, err
	}
	until := now.Add(l.lease - leaseMargin(l.lease))
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
func (l *StoreLocker) busy(system string, cur lockRecord, rev int64, holder string) error {
	switch {
	case cur.Holder == "":
		return nil
	case cur.Holder == holder && cur.Owner == l.owner && l.t.ours(cur):
		return nil
	case cur.Owner == "" && l.t.ours(cur) && cur.Holder == holder:
		return nil
	case cur.Owner == "" && l.t.ours(cur):
		// Released with another job unfinished: that job goes first, as
		// on the Runner's path; it is stepped by its own controller.
		if !l.t.expired(system, cur, rev) {
			return &BusyError{System: system, Holder: cur.Holder}
		}
		return nil
	case l.t.expired(system, cur, rev):
		return nil
	}
	return &BusyError{System: system, Holder: cur.Holder, Owner: cur.Owner}
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
		if unmarshalRecord(cur.Value, &rec) == nil && (rec.Holder != holder || !l.t.ours(rec) || rec.Owner != l.owner && rec.Owner != "") {
			// Another job's, another namespace's, or the same job's
			// under another process (which is acting for it now).
			return nil, storage.ErrNoChange
		}
		return marshalRecord(lockRecord{})
	})
	return err
}

// LockTaker is an optional [SystemLocker] capability, found by type
// assertion: TakeLock is Lock that also reports whether the call took the
// system anew (it was free, released, or held by another process) rather
// than renewing this process's live lock for holder. When it took it, the
// Stepper stores the job (persist) before its first BMC call of a job that
// has started: a controller replica stepping a stale copy of a job (one that
// another replica completed and unlocked meanwhile) fails at that write, a
// compare-and-swap where the host's persist is one (an optimistic lock),
// instead of acting on the BMC for a finished job. Without it, a taken lock
// cannot be told from a renewal, and a stale copy whose next action needs no
// write first (a poll, a retry) reaches the BMC. [StoreLocker] implements it;
// a wrapper around a locker must pass it through.
type LockTaker interface {
	TakeLock(ctx context.Context, system, holder string) (validFor time.Duration, taken bool, err error)
}

var _ LockTaker = (*StoreLocker)(nil)

// NoLocking is the StepperConfig.Locks of a host that keeps two jobs, and
// two processes, off one system by other means, and says so: Step then
// takes no lock, and fences its BMC requests only by a [bmc.Fence] the host
// puts in the ctx it passes (bmc.WithFence). The Runner uses it for its own
// Stepper, whose steps run under the Runner's locks and fences. A Stepper
// with Locks left nil is refused by NewStepper, so that the choice is
// visible in the host's code.
var NoLocking SystemLocker = noLocking{}

type noLocking struct{}

// Lock implements SystemLocker: always granted, for as long as the caller
// likes (the Stepper does not call it).
func (noLocking) Lock(context.Context, string, string) (time.Duration, error) {
	return time.Duration(1<<63 - 1), nil
}

// Unlock implements SystemLocker: nothing to do.
func (noLocking) Unlock(context.Context, string, string) error { return nil }

func isNoLocking(l SystemLocker) bool {
	_, ok := l.(noLocking)
	return ok
}
