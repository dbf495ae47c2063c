package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/storage"
)

// writeCounts counts the writes the runners sent to their Store, by key
// prefix (jobs/ versus systems/, the lock records) and operation, and notes
// when each job's completion was written.
type writeCounts struct {
	jobsCreate, jobsUpdate, jobsDelete atomic.Int64
	sysCreate, sysUpdate, sysDelete    atomic.Int64
	other                              atomic.Int64
	// Writes that returned an error (a lost compare-and-swap, a lock
	// already taken by another replica, ...), by prefix.
	failedJobs, failedSystems atomic.Int64
	// updateLatency is how long the job-record updates took: the time a
	// step waits for the store between its BMC calls.
	updateLatency latencies
	// failedBy counts the failed writes by prefix, operation and cause
	// ("systems/ create: exists"), for the report.
	failedBy sync.Map // string -> *atomic.Int64
	// Writes a crashed process's runner tried after its crash (-crash-at):
	// refused, never sent to the store.
	refusedDead atomic.Int64

	released    atomic.Int64 // lock records deleted: systems freed
	lastRelease atomic.Int64 // unix nanoseconds of the last one

	ncompleted atomic.Int64
	// -crash-at: once crashAfter job-record updates were acknowledged,
	// fence is set (the runners' process is dead: their writes are refused)
	// and crashed is closed. At the moment of that write, not at the next
	// poll.
	crashAfter int64
	fence      *atomic.Bool
	crashed    chan struct{}
	mu         sync.Mutex
	completed  map[string]time.Time // job name -> when its completion write was acknowledged
	dupes      int                  // acknowledged completion writes of a job already completed
	createRev  map[string]int64     // job name -> the revision Submit created it at: its place in its system's order
	// unacked counts completions found in the store with no acknowledged
	// write (listed holds them): their acknowledgement cut off by a crash,
	// or not back yet when the store was read.
	unacked int
	listed  map[string]bool
}

func newWriteCounts() *writeCounts {
	return &writeCounts{completed: map[string]time.Time{}, createRev: map[string]int64{}, listed: map[string]bool{}}
}

func (c *writeCounts) jobWrites() int64 {
	return c.jobsCreate.Load() + c.jobsUpdate.Load() + c.jobsDelete.Load()
}

func (c *writeCounts) systemWrites() int64 {
	return c.sysCreate.Load() + c.sysUpdate.Load() + c.sysDelete.Load()
}

// lastCompletion is the latest completion write.
func (c *writeCounts) lastCompletion() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var last time.Time
	for _, t := range c.completed {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// noteCompletion notes the acknowledged write of job name's completion. A
// second acknowledged completion write of a job is a duplicate; a
// completion that noteUnacked found in the store first is this write,
// acknowledged after the store was read: a write commits before its
// acknowledgement comes back (a group commit wakes its writers after the
// commit), so the main loop's List can see it in between.
func (c *writeCounts) noteCompletion(name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listed[name] {
		delete(c.listed, name)
		c.unacked--
		c.completed[name] = at
		return
	}
	if _, ok := c.completed[name]; ok {
		c.dupes++
		return
	}
	c.completed[name] = at
	c.ncompleted.Add(1)
}

// noteUnacked notes job name, found completed in the store, as completed
// at, unless its completion write was acknowledged: after -crash-at, a
// completion write the dead runner sent may have committed with its
// acknowledgement lost (its context canceled), and the new runners never
// write that job again. If the write's acknowledgement comes after all,
// noteCompletion takes it back.
func (c *writeCounts) noteUnacked(name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.completed[name]; ok {
		return
	}
	c.completed[name] = at
	c.listed[name] = true
	c.unacked++
	c.ncompleted.Add(1)
}

// countingStore is a storage.Store that counts the writes going through it
// into c. It keeps the change feed and compaction of the store it wraps, so
// the Runner follows changes as it would without the wrapper.
type countingStore struct {
	s       storage.Store
	feed    storage.ChangeFeed
	jobs    string // key prefix of job records, e.g. "bmckit/jobs/"
	systems string // key prefix of system locks, e.g. "bmckit/systems/"
	c       *writeCounts
	t       *tracker // counts job-record reads and writes in flight; may be nil
	// dead, once set, refuses every write without sending it (-crash-at:
	// the runners of a process that died write nothing more); nil: never.
	dead *atomic.Bool
}

// errDead is the write error of a dead process's runner (-crash-at).
var errDead = errors.New("bench/fleet: this runner's process crashed (-crash-at); the write was not sent")

// refused reports whether the writes of s's process are refused, and
// counts the refusal.
func (s *countingStore) refused() bool {
	if s.dead == nil || !s.dead.Load() {
		return false
	}
	s.c.refusedDead.Add(1)
	return true
}

var (
	_ storage.Store        = (*countingStore)(nil)
	_ storage.ChangeFeed   = (*countingStore)(nil)
	_ storage.ValueSkipper = (*countingStore)(nil)
	_ storage.Compactor    = (*countingStore)(nil)
)

// newCountingStore wraps s, whose runners use keyPrefix (job.Config.KeyPrefix).
// s must have a change feed, as every in-tree store does: the wrapper
// offers one, and the Runner would find it even where s has none.
func newCountingStore(s storage.Store, keyPrefix string, c *writeCounts, t *tracker) (*countingStore, error) {
	feed, ok := s.(storage.ChangeFeed)
	if !ok {
		return nil, fmt.Errorf("store %T has no change feed (storage.ChangeFeed); the counting wrapper needs one", s)
	}
	return &countingStore{s: s, feed: feed, jobs: keyPrefix + "jobs/", systems: keyPrefix + "systems/", c: c, t: t}, nil
}

func (s *countingStore) count(key string, op byte, err error) {
	if err != nil {
		s.c.noteFailure(s.prefixOf(key), op, err)
	}
	var ctr *atomic.Int64
	switch {
	case err != nil && hasPrefix(key, s.jobs):
		ctr = &s.c.failedJobs
	case err != nil && hasPrefix(key, s.systems):
		ctr = &s.c.failedSystems
	case err != nil:
		ctr = &s.c.other
	case hasPrefix(key, s.jobs):
		ctr = pick(op, &s.c.jobsCreate, &s.c.jobsUpdate, &s.c.jobsDelete)
	case hasPrefix(key, s.systems):
		ctr = pick(op, &s.c.sysCreate, &s.c.sysUpdate, &s.c.sysDelete)
		if op == 'd' {
			s.c.released.Add(1)
			s.c.lastRelease.Store(time.Now().UnixNano())
		}
	default:
		ctr = &s.c.other
	}
	if ctr.Add(1) == s.c.crashAfter && ctr == &s.c.jobsUpdate && s.c.fence != nil {
		s.c.fence.Store(true)
		close(s.c.crashed)
	}
}

func pick(op byte, c, u, d *atomic.Int64) *atomic.Int64 {
	switch op {
	case 'c':
		return c
	case 'u':
		return u
	}
	return d
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// jobOp counts a job record read or write in flight: a job in one is in a
// step, not waiting.
func (s *countingStore) jobOp(key string) func() {
	if s.t == nil || !hasPrefix(key, s.jobs) {
		return func() {}
	}
	s.t.inStore.Add(1)
	return func() { s.t.inStore.Add(-1) }
}

func (s *countingStore) Get(ctx context.Context, key string) (storage.Record, error) {
	defer s.jobOp(key)()
	return s.s.Get(ctx, key)
}

func (s *countingStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if s.refused() {
		return 0, errDead
	}
	defer s.jobOp(key)()
	rev, err := s.s.Create(ctx, key, value)
	s.count(key, 'c', err)
	if err == nil && hasPrefix(key, s.jobs) {
		s.c.mu.Lock()
		s.c.createRev[key[len(s.jobs):]] = rev
		s.c.mu.Unlock()
	}
	return rev, err
}

func (s *countingStore) Update(ctx context.Context, key string, value []byte, revision int64) (int64, error) {
	if s.refused() {
		return 0, errDead
	}
	defer s.jobOp(key)()
	t0 := time.Now()
	rev, err := s.s.Update(ctx, key, value, revision)
	if hasPrefix(key, s.jobs) {
		s.c.updateLatency.note(time.Since(t0))
	}
	s.count(key, 'u', err)
	if err == nil && hasPrefix(key, s.jobs) && completedRecord(value) {
		s.c.noteCompletion(key[len(s.jobs):], time.Now())
	}
	return rev, err
}

func (s *countingStore) Delete(ctx context.Context, key string, revision int64) error {
	if s.refused() {
		return errDead
	}
	defer s.jobOp(key)()
	err := s.s.Delete(ctx, key, revision)
	s.count(key, 'd', err)
	return err
}

func (s *countingStore) List(ctx context.Context, prefix string) ([]storage.Record, error) {
	return s.s.List(ctx, prefix)
}

func (s *countingStore) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	return s.feed.Changes(ctx, prefix, since, limit)
}

// ChangesSkipping passes storage.ValueSkipper through (or emulates it over
// a store without), as the Runner would find it without the wrapper.
func (s *countingStore) ChangesSkipping(ctx context.Context, prefix string, since int64, limit int, skip func(string, int64) bool) (storage.Changes, error) {
	return storage.ChangesSkipping(ctx, s.feed, prefix, since, limit, skip)
}

func (s *countingStore) Compact(ctx context.Context, revision int64) error {
	if c, ok := s.s.(storage.Compactor); ok {
		return c.Compact(ctx, revision)
	}
	return nil
}

var (
	statusKey = []byte(`"status":{`)
	resultKey = []byte(`"result":`)
	tasksKey  = []byte(`"tasks":[`)
)

// completedRecord reports whether a job record (JSON, as job.Job marshals:
// status is the last field, and its result comes before its tasks) has a
// job-level result, i.e. the job completed, without decoding the record.
// The benchmark cross-checks it against Runner.Wait on its first job and
// against the decoded records at the end.
func completedRecord(v []byte) bool {
	// The first `"status":{` is the job's status: the fields before it (name,
	// spec) have no "status" object, and a quote inside a string is escaped.
	// (bytes.LastIndex, which has no fast path, cost 7% of the run's CPU.)
	i := bytes.Index(v, statusKey)
	if i < 0 {
		return false
	}
	st := v[i:]
	r := bytes.Index(st, resultKey)
	if r < 0 {
		return false
	}
	t := bytes.Index(st, tasksKey)
	return t < 0 || r < t
}

func (s *countingStore) prefixOf(key string) string {
	switch {
	case hasPrefix(key, s.jobs):
		return "jobs/"
	case hasPrefix(key, s.systems):
		return "systems/"
	}
	return "other"
}

// noteFailure counts a failed write by prefix, operation and cause.
func (c *writeCounts) noteFailure(prefix string, op byte, err error) {
	cause := "other error"
	switch {
	case errors.Is(err, storage.ErrExists):
		cause = "exists"
	case errors.Is(err, storage.ErrConflict):
		cause = "revision conflict"
	case errors.Is(err, storage.ErrNotFound):
		cause = "not found"
	case errors.Is(err, context.DeadlineExceeded):
		cause = "deadline exceeded"
	case errors.Is(err, context.Canceled):
		cause = "canceled"
	}
	name := map[byte]string{'c': "create", 'u': "update", 'd': "delete"}[op]
	v, _ := c.failedBy.LoadOrStore(prefix+" "+name+": "+cause, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// failures lists the failed writes by cause, most first.
func (c *writeCounts) failures() string {
	type row struct {
		what string
		n    int64
	}
	var rows []row
	c.failedBy.Range(func(k, v any) bool {
		rows = append(rows, row{k.(string), v.(*atomic.Int64).Load()})
		return true
	})
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].n > rows[j].n || rows[i].n == rows[j].n && rows[i].what < rows[j].what
	})
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s %d", r.what, r.n))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// latencies is a histogram of durations in buckets a quarter of a power
// of two wide (from 1 µs), safe for concurrent use.
type latencies struct {
	buckets [128]atomic.Int64
	max     atomic.Int64
}

func (l *latencies) note(d time.Duration) {
	us := max(d.Microseconds(), 1)
	b := 0
	for v := us; v > 1; v >>= 1 {
		b += 4
	}
	// The quarter within the power of two: the two bits after the top one.
	if top := bits.Len64(uint64(us)) - 1; top >= 2 {
		b += int(uint64(us)>>(top-2)) & 3
	}
	l.buckets[min(b, len(l.buckets)-1)].Add(1)
	for {
		m := l.max.Load()
		if int64(d) <= m || l.max.CompareAndSwap(m, int64(d)) {
			break
		}
	}
}

// quantile is the upper bound of the bucket holding quantile q.
func (l *latencies) quantile(q float64) time.Duration {
	var total int64
	for i := range l.buckets {
		total += l.buckets[i].Load()
	}
	if total == 0 {
		return 0
	}
	want, seen := int64(q*float64(total)+0.5), int64(0)
	for i := range l.buckets {
		if seen += l.buckets[i].Load(); seen >= max(want, 1) {
			pow, quarter := i/4, i%4
			us := (int64(1) << pow) * int64(5+quarter) / 4 // the bucket's upper bound
			return time.Duration(us) * time.Microsecond
		}
	}
	return time.Duration(l.max.Load())
}

func (l *latencies) String() string {
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s", fmtDur(l.quantile(0.5)), fmtDur(l.quantile(0.9)),
		fmtDur(l.quantile(0.99)), fmtDur(time.Duration(l.max.Load())))
}
