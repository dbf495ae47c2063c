package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
)

// storeLog is a memstore that keeps every successful write, in commit
// order, with who made it (a Runner's Owner, through as) and the real time
// just before the call and just after it returned: the commit is between
// the two. Writes go through one mutex held across the store call, so the
// log's order is the store's. The balance tests judge the replicas by this
// history rather than by samples taken at chosen moments: which states the
// store went through, and in which order, does not depend on how fast the
// machine runs.
type storeLog struct {
	*memstore.Store

	runners int // how many heartbeat records a full listing shows

	mu     sync.Mutex
	events []writeEvent
	lists  map[string]listSeen // per writer: its listings of runner records
}

// writeEvent is one committed write.
type writeEvent struct {
	by      string // the Owner of the runner that wrote
	key     string
	deleted bool
	// owner, holder and lease are a lock record's Owner, Holder and
	// LeaseMillis; lease is also a heartbeat record's LeaseMillis.
	owner, holder string
	lease         time.Duration
	before, after time.Time // the commit happened between these
}

// listSeen is what a runner's listings of the heartbeat records showed.
type listSeen struct {
	full  bool // a listing returned every expected record
	again bool // a listing started after that one had returned
}

// newStoreLog returns an empty store for runners replicas.
func newStoreLog(runners int) *storeLog {
	return &storeLog{Store: memstore.New(), runners: runners, lists: map[string]listSeen{}}
}

// as is the store as runner by uses it: its writes are logged as by's.
func (l *storeLog) as(by string) storage.Store { return &loggedStore{log: l, by: by} }

// snapshot returns the events so far.
func (l *storeLog) snapshot() []writeEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]writeEvent(nil), l.events...)
}

func (l *storeLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

func (l *storeLog) write(by, key string, value []byte, deleted bool, call func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	before := time.Now()
	if err := call(); err != nil {
		return err
	}
	ev := writeEvent{by: by, key: key, deleted: deleted, before: before, after: time.Now()}
	if !deleted && (strings.HasPrefix(key, syslock.KeyPrefix) || strings.HasPrefix(key, runnersPrefix)) {
		var lr struct {
			Owner       string `json:"owner"`
			Holder      string `json:"holder"`
			LeaseMillis int64  `json:"leaseMillis"`
		}
		if err := json.Unmarshal(value, &lr); err == nil {
			ev.owner, ev.holder, ev.lease = lr.Owner, lr.Holder, time.Duration(lr.LeaseMillis)*time.Millisecond
		}
	}
	l.events = append(l.events, ev)
	return nil
}

// waitListedAll waits until each of owners has counted every replica live:
// it listed the heartbeat records and found all of them, and since
// then began another listing (a runner lists one at a time, so the first
// one's result had been taken in by then).
func (l *storeLog) waitListedAll(t *testing.T, owners []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		done := 0
		for _, o := range owners {
			if l.lists[o].again {
				done++
			}
		}
		seen := make(map[string]listSeen, len(l.lists))
		for o, s := range l.lists {
			seen[o] = s
		}
		l.mu.Unlock()
		if done == len(owners) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replicas did not all list each other's heartbeat records within 30s: %+v", seen)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// lockHistory replays the lock writes of events, in order, calling f after
// each with how many systems each owner then held, and how many of those it
// may have taken as "nobody left waiting" (docs/jobs.md, "Replicas share
// the fleet"): a runner claims a system that it found takeable for a whole
// lease whatever its share. A take counts as such when the system may have
// been takeable that long when the write returned: free since the start of
// the write that freed it (or since start, when it never had a lock), or
// held by another whose last write started a lease before that. A system
// keeps counting so while its taker keeps it.
func lockHistory(events []writeEvent, start time.Time, f func(i int, held, overdue map[string]int)) {
	type lockState struct {
		owner   string
		overdue bool
		before  time.Time // of the write that made this state
		lease   time.Duration
	}
	locks := map[string]lockState{}
	held, overdue := map[string]int{}, map[string]int{}
	for i, ev := range events {
		if !strings.HasPrefix(ev.key, syslock.KeyPrefix) {
			continue
		}
		prev, ok := locks[ev.key]
		if prev.owner != "" {
			held[prev.owner]--
			if prev.overdue {
				overdue[prev.owner]--
			}
		}
		next := lockState{before: ev.before, lease: ev.lease}
		if !ev.deleted {
			next.owner = ev.owner
		}
		switch {
		case next.owner == "":
		case next.owner == prev.owner:
			next.overdue = prev.overdue
		default:
			takeable := start
			if ok {
				takeable = prev.before
			}
			if prev.owner != "" {
				takeable = prev.before.Add(prev.lease)
			}
			next.overdue = ev.after.Sub(takeable) >= ev.lease
		}
		if next.owner != "" {
			held[next.owner]++
			if next.overdue {
				overdue[next.owner]++
			}
		}
		locks[ev.key] = next
		f(i, held, overdue)
	}
}

// runnersPrefix is where the Runners of the balance tests keep their
// heartbeat records.
const runnersPrefix = "bmckit/runners/"

// allLiveUntil is a time until which no runner can have judged another one
// dead, and why it ends there: a runner counts another dead once it saw
// its heartbeat record unchanged for the record's lease, which needs two
// commits of the record (or its last one and end) a lease apart; each
// commit was after the write's before and before its after. It returns end
// when no record went that long unrenewed.
func allLiveUntil(events []writeEvent, end time.Time) (time.Time, string) {
	cut, why := end, ""
	last := map[string]writeEvent{}
	stale := func(prev writeEvent, next time.Time) {
		if prev.deleted || next.Sub(prev.before) < prev.lease {
			return
		}
		if at := prev.before.Add(prev.lease); at.Before(cut) {
			cut = at
			why = fmt.Sprintf("%s was not rewritten within its lease %v of the write that started %v before the end",
				prev.key, prev.lease, end.Sub(prev.before).Round(time.Millisecond))
		}
	}
	for _, ev := range events {
		if !strings.HasPrefix(ev.key, runnersPrefix) {
			continue
		}
		if prev, ok := last[ev.key]; ok {
			stale(prev, ev.after)
		}
		last[ev.key] = ev
	}
	for _, prev := range last {
		stale(prev, end)
	}
	return cut, why
}

// checkLeasesRespected asserts that no runner overwrote or deleted a lock
// that another runner held before that lock had gone unrenewed for its
// whole lease: from the start of the holder's last write to the end of the
// other's, by the real clock (the taker counts from when it first saw the
// lock, which is after the holder's write committed, so this can only be
// longer than what the taker counted, however slow the machine).
func checkLeasesRespected(t *testing.T, events []writeEvent) {
	t.Helper()
	last := map[string]int{} // lock key: index of its last write
	for i, ev := range events {
		if !strings.HasPrefix(ev.key, syslock.KeyPrefix) {
			continue
		}
		if p, ok := last[ev.key]; ok {
			prev := events[p]
			if !prev.deleted && prev.owner != "" && prev.owner != ev.by {
				if took := ev.after.Sub(prev.before); took < prev.lease {
					t.Errorf("%s took %s from %s %v after its last write (lease %v)", ev.by, ev.key, prev.owner, took, prev.lease)
				}
			}
		}
		last[ev.key] = i
	}
}

type loggedStore struct {
	log *storeLog
	by  string
}

func (s *loggedStore) Get(ctx context.Context, key string) (storage.Record, error) {
	return s.log.Store.Get(ctx, key)
}

func (s *loggedStore) List(ctx context.Context, prefix string) ([]storage.Record, error) {
	heartbeats := prefix == runnersPrefix
	if heartbeats {
		s.log.mu.Lock()
		if ls := s.log.lists[s.by]; ls.full {
			ls.again = true
			s.log.lists[s.by] = ls
		}
		s.log.mu.Unlock()
	}
	recs, err := s.log.Store.List(ctx, prefix)
	if heartbeats && err == nil {
		s.log.mu.Lock()
		ls := s.log.lists[s.by]
		ls.full = ls.full || len(recs) == s.log.runners
		s.log.lists[s.by] = ls
		s.log.mu.Unlock()
	}
	return recs, err
}

func (s *loggedStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	var rev int64
	err := s.log.write(s.by, key, value, false, func() (err error) {
		rev, err = s.log.Store.Create(ctx, key, value)
		return err
	})
	return rev, err
}

func (s *loggedStore) Update(ctx context.Context, key string, value []byte, revision int64) (int64, error) {
	var rev int64
	err := s.log.write(s.by, key, value, false, func() (err error) {
		rev, err = s.log.Store.Update(ctx, key, value, revision)
		return err
	})
	return rev, err
}

func (s *loggedStore) Delete(ctx context.Context, key string, revision int64) error {
	return s.log.write(s.by, key, nil, true, func() error {
		return s.log.Store.Delete(ctx, key, revision)
	})
}

// Changes and ChangesSkipping pass the memstore's feed through, so a
// runner over a loggedStore reads changes as it would over the memstore.
func (s *loggedStore) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	return s.log.Store.Changes(ctx, prefix, since, limit)
}

func (s *loggedStore) ChangesSkipping(ctx context.Context, prefix string, since int64, limit int, skip func(string, int64) bool) (storage.Changes, error) {
	return s.log.Store.ChangesSkipping(ctx, prefix, since, limit, skip)
}

var (
	_ storage.ChangeFeed   = (*loggedStore)(nil)
	_ storage.ValueSkipper = (*loggedStore)(nil)
)
