package syslock

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
)

// KeyPrefix is where every system lock lives in a Store:
// KeyPrefix + url.PathEscape(system). It is the same for every Runner
// and StoreLocker whatever their KeyPrefix, so that two of them sharing a
// Store exclude each other on a system even when they keep their jobs
// apart. A lock names the key prefix of its holder's job (see docs/jobs.md,
// "Exclusivity").
const KeyPrefix = "bmckit/systems/"

// DefaultNamespace is the default key prefix of the jobs a lock's holder
// belongs to: job.Config.KeyPrefix's and StoreLockerConfig.KeyPrefix's
// default. A Record of this namespace stores Jobs as "".
const DefaultNamespace = "bmckit/"

// Record is a system's lock, stored as JSON under KeyPrefix +
// <escaped SystemKey>. See docs/jobs.md, "Scheduling".
type Record struct {
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

// Table reads and writes lock records and judges lease expiry by
// observation. It is the store side that StoreLocker and the job package's
// Runner share: a Runner claims systems with it (Read, then Write by
// compare-and-swap), so the two exclude each other on one Store. Hosts use
// StoreLocker or Read; Table is for writers of lock records. Safe for
// concurrent use.
type Table struct {
	store storage.Store
	jobs  string // the writer's KeyPrefix, as Record.Jobs ("" for the default)
	clk   clock.Clock

	mu   sync.Mutex
	seen map[string]observation
}

type observation struct {
	rev int64
	at  time.Time
}

// NewTable returns a table over s for the writer whose jobs live under
// keyPrefix (its namespace, stored in the records it writes as Record.Jobs);
// clk judges lease expiry (nil for readers that never call Expired or
// Write).
func NewTable(s storage.Store, keyPrefix string, clk clock.Clock) *Table {
	if keyPrefix == DefaultNamespace {
		keyPrefix = ""
	}
	return &Table{store: s, jobs: keyPrefix, clk: clk, seen: map[string]observation{}}
}

// Key is system's lock record key: KeyPrefix + url.PathEscape(system).
func (t *Table) Key(system string) string { return KeyPrefix + url.PathEscape(system) }

// Ours reports whether l's holder is a job of this table's namespace.
func (t *Table) Ours(l Record) bool { return l.Jobs == t.jobs }

// Read returns the system's lock record and its revision (0 when absent).
func (t *Table) Read(ctx context.Context, system string) (Record, int64, error) {
	rec, err := t.store.Get(ctx, t.Key(system))
	if errors.Is(err, storage.ErrNotFound) {
		t.Forget(system)
		return Record{}, 0, nil
	}
	if err != nil {
		return Record{}, 0, err
	}
	var l Record
	if err := gojson.Unmarshal(rec.Value, &l); err != nil {
		// An undecodable lock protects nothing we can name: treat it as
		// free, but only through a compare-and-swap on its revision.
		return Record{}, rec.Revision, nil
	}
	return l, rec.Revision, nil
}

// Expired reports whether the lease at revision rev has been observed
// unchanged for its whole length, by this process's clock. The first
// observation of a revision starts the count.
func (t *Table) Expired(system string, l Record, rev int64) bool {
	now := t.clk.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.seen[system]
	if !ok || o.rev != rev {
		t.seen[system] = observation{rev: rev, at: now}
		return false
	}
	return now.Sub(o.at) >= time.Duration(l.LeaseMillis)*time.Millisecond
}

// Until is when the lease at revision rev runs out for this process: when
// it first observed rev (Expired) plus the lease's length, by its clock.
// Zero when it has not observed rev.
func (t *Table) Until(system string, l Record, rev int64) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.seen[system]
	if !ok || o.rev != rev {
		return time.Time{}
	}
	return o.at.Add(time.Duration(l.LeaseMillis) * time.Millisecond)
}

// Observed reports whether this process has seen system's lock held by
// someone (its expiry count is running).
func (t *Table) Observed(system string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.seen[system]
	return ok
}

// Forget drops what the table observed of system's lock (its expiry count).
func (t *Table) Forget(system string) {
	t.mu.Lock()
	delete(t.seen, system)
	t.mu.Unlock()
}

// Write stores l for system by compare-and-swap on rev (Create when rev is
// 0) and returns the new revision; ErrConflict, ErrExists and ErrNotFound
// mean someone else wrote first.
func (t *Table) Write(ctx context.Context, system string, l Record, rev int64, lease time.Duration) (int64, error) {
	l.LeaseMillis = lease.Milliseconds()
	l.Expires = t.clk.Now().Add(lease).UTC().Truncate(time.Millisecond)
	if l.Holder != "" {
		l.Jobs = t.jobs
	}
	data, err := gojson.Marshal(l)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return t.store.Create(ctx, t.Key(system), data)
	}
	return t.store.Update(ctx, t.Key(system), data, rev)
}

// LostRace reports whether err means another writer changed the record
// between our read and our write.
func LostRace(err error) bool {
	return errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrNotFound)
}

// Margin is how much earlier than its length a lease stops being used
// by its holder: slack for clock-rate differences and requests in flight.
func Margin(lease time.Duration) time.Duration { return lease / 6 }
