package job_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// lockWrites counts the acknowledged writes of system lock records by kind,
// and can refuse lock updates that name a given holder.
type lockWrites struct {
	feedStore
	mu                        sync.Mutex
	creates, updates, deletes int
	refuseHolder              string // lock updates whose value names it fail once each
	refused                   int
}

func (s *lockWrites) count(key string, n *int) {
	if strings.Contains(key, "/systems/") {
		s.mu.Lock()
		*n++
		s.mu.Unlock()
	}
}

func (s *lockWrites) Create(ctx context.Context, k string, v []byte) (int64, error) {
	rev, err := s.Store.Create(ctx, k, v)
	if err == nil {
		s.count(k, &s.creates)
	}
	return rev, err
}

func (s *lockWrites) Update(ctx context.Context, k string, v []byte, rev int64) (int64, error) {
	if strings.Contains(k, "/systems/") {
		s.mu.Lock()
		refuse := s.refuseHolder != "" && strings.Contains(string(v), `"holder":"`+s.refuseHolder+`"`)
		if refuse {
			s.refuseHolder = ""
			s.refused++
		}
		s.mu.Unlock()
		if refuse {
			return 0, errors.New("lockWrites: refused on purpose")
		}
	}
	n, err := s.Store.Update(ctx, k, v, rev)
	if err == nil {
		s.count(k, &s.updates)
	}
	return n, err
}

func (s *lockWrites) Delete(ctx context.Context, k string, rev int64) error {
	err := s.Store.Delete(ctx, k, rev)
	if err == nil {
		s.count(k, &s.deletes)
	}
	return err
}

// runQueued submits n netboot jobs for one system before the runner starts
// (so they are all queued behind each other) and waits for them.
func runQueued(t *testing.T, store storage.Store, n int) (*fake.BMC, []*job.Job) {
	t.Helper()
	e := newEnv(t, job.Config{Store: store})
	const url = "redfish://10.0.7.1/redfish/v1/Systems/1"
	b := e.addBMC(t, url, fake.Options{Power: bmc.PowerOn})
	ctx := context.Background()
	for i := range n {
		_, err := e.runner.Submit(ctx, fmt.Sprintf("q%d", i), netboot(url))
		require.NoError(t, err)
	}
	e.start(t)
	var jobs []*job.Job
	for i := range n {
		j := wait(t, e.runner, fmt.Sprintf("q%d", i))
		assertCompleted(t, j, conditions.ResultSucceeded)
		jobs = append(jobs, j)
	}
	e.stop()
	return b, jobs
}

// inOrder checks that the jobs ran one after the other, in submission order,
// and that each sent its state changes once: never interleaved.
func inOrder(t *testing.T, b *fake.BMC, jobs []*job.Job) {
	t.Helper()
	for i := 1; i < len(jobs); i++ {
		prev, cur := jobs[i-1].Status.CompletionTime.Time, jobs[i].Status.StartTime.Time
		assert.False(t, cur.Before(prev), "job %d started at %v, before job %d completed at %v", i, cur, i-1, prev)
	}
	var sets []string
	for _, c := range b.Calls() {
		if c.Method == fake.MethodSetPower {
			sets = append(sets, fmt.Sprint(c.Args...))
		}
	}
	want := strings.Repeat("offon", len(jobs))
	assert.Equal(t, want, strings.Join(sets, ""), "SetPower calls, in order")
	assert.Equal(t, 1, b.Sessions().MaxOpen, "sessions open at once")
}

// Jobs queued on one system follow each other on one lock record: the lock
// passes from each completed job to the next in one write (created once,
// deleted once). Each job still closes its BMC session before its
// completion is written.
func TestHandOverQueuedJobs(t *testing.T) {
	store := &lockWrites{feedStore: feedStore{memstore.New()}}
	const n = 5
	b, jobs := runQueued(t, store, n)
	inOrder(t, b, jobs)
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Equal(t, 1, store.creates, "lock creates")
	assert.Equal(t, 1, store.deletes, "lock deletes")
	assert.GreaterOrEqual(t, store.updates, n-1, "lock updates (one handover per following job, plus any renewals)")
	assert.Equal(t, n, b.Sessions().Logins, "logins for %d jobs on one system", n)
	assert.Equal(t, 0, b.Sessions().Open, "sessions left open")
}

// A handover the store refuses leaves the system to be claimed again: the
// next job still runs once, in order, after the previous one.
func TestHandOverRefusedFallsBackToClaim(t *testing.T) {
	store := &lockWrites{feedStore: feedStore{memstore.New()}, refuseHolder: "q1"}
	b, jobs := runQueued(t, store, 3)
	inOrder(t, b, jobs)
	store.mu.Lock()
	assert.Equal(t, 1, store.refused, "refused handovers")
	// q1's lock was claimed anew: over the record q0 left (an update), or,
	// when the lock sweep removed that record first (a machine under load),
	// as a new record; either way at least one more lock write than the
	// first create, and every lock released at the end.
	assert.GreaterOrEqual(t, store.creates+store.updates, 3, "lock writes: the first claim, the claim of q1, the handover to q2")
	store.mu.Unlock()
	recs, err := store.List(context.Background(), "")
	require.NoError(t, err)
	for _, rec := range recs {
		assert.NotContains(t, rec.Key, "/systems/", "lock record left behind: %s", rec.Value)
	}
}

// renewalFirst rewrites a lock record (as a renewal in flight would) just
// before the first delete of it arrives, so the delete carries a stale
// revision.
type renewalFirst struct {
	feedStore
	once sync.Once
}

func (s *renewalFirst) Delete(ctx context.Context, k string, rev int64) error {
	if strings.Contains(k, "/systems/") {
		s.once.Do(func() {
			if rec, err := s.Store.Get(ctx, k); err == nil {
				_, _ = s.Store.Update(ctx, k, rec.Value, rec.Revision)
			}
		})
	}
	return s.Store.Delete(ctx, k, rev)
}

// A renewal that lands between a job's completion and the release of its
// lock must not leave the lock behind until its lease runs out: the release
// finds the lock still naming the job and this runner, and deletes it at
// its new revision.
func TestReleaseAfterRenewalRace(t *testing.T) {
	store := &renewalFirst{feedStore: feedStore{memstore.New()}}
	b, jobs := runQueued(t, store, 1)
	inOrder(t, b, jobs)
	recs, err := store.List(context.Background(), "")
	require.NoError(t, err)
	for _, rec := range recs {
		assert.NotContains(t, rec.Key, "/systems/", "lock record left behind: %s", rec.Value)
	}
}
