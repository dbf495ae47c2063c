package job_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/pgtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/task"
)

// Three live runners share one store: every job runs exactly once (no task
// sent twice), no BMC ever has two sessions at once, and jobs on one system
// run one after another (no interleaving), in submission order, whichever
// replica they were submitted through.
func testReplicas(t *testing.T, store storage.Store) {
	fleet := fake.NewFleet()
	const nBMC, nJobs = 4, 16
	urls := make([]string, nBMC)
	bmcs := make([]*fake.BMC, nBMC)
	for i := range urls {
		urls[i] = fmt.Sprintf("redfish://10.3.0.%d/redfish/v1/Systems/1", i+1)
		var err error
		bmcs[i], err = fleet.AddNew(urls[i], fake.Options{Power: bmc.PowerOn, Latency: time.Millisecond})
		require.NoError(t, err)
	}
	// Every state-changing call, per BMC, tagged with its job.
	var mu sync.Mutex
	calls := make([][]string, nBMC)
	for i, b := range bmcs {
		for _, m := range []fake.Method{fake.MethodSetPower, fake.MethodSetBootOverride} {
			b.SetHook(m, func(ctx context.Context, c fake.Call) error {
				call, _ := job.CallFromContext(ctx)
				mu.Lock()
				calls[i] = append(calls[i], call.Job)
				mu.Unlock()
				return nil
			})
		}
	}
	var runners []*job.Runner
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 3)
	for i := 0; i < 3; i++ {
		r, err := job.NewRunner(job.Config{
			Store: store, Dialer: fleet, Credentials: labCreds, Workers: 4,
			Owner: fmt.Sprintf("replica-%d", i), ScanInterval: 10 * time.Millisecond, PollInterval: time.Millisecond,
		})
		require.NoError(t, err)
		runners = append(runners, r)
		go func() { done <- r.Start(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range runners {
			<-done
		}
	})
	for i := 0; i < nJobs; i++ {
		// Submitted through different replicas.
		_, err := runners[i%3].Submit(context.Background(), fmt.Sprintf("rep-%02d", i), netboot(urls[i%nBMC]))
		require.NoError(t, err)
	}
	for i := 0; i < nJobs; i++ {
		j := wait(t, runners[(i+1)%3], fmt.Sprintf("rep-%02d", i))
		assertCompleted(t, j, conditions.ResultSucceeded)
		for k, ts := range j.Status.Tasks {
			assert.Equal(t, 1, ts.Attempts, "job %s task %d ran once", j.Name, k)
		}
	}
	mu.Lock()
	for i := range bmcs {
		assert.Equal(t, 0, interleavings(calls[i]), "BMC %d: calls %v", i, calls[i])
		var order []string // jobs in the order they first acted
		for _, c := range calls[i] {
			if len(order) == 0 || order[len(order)-1] != c {
				order = append(order, c)
			}
		}
		var want []string // submission order
		for k := i; k < nJobs; k += nBMC {
			want = append(want, fmt.Sprintf("rep-%02d", k))
		}
		assert.Equal(t, want, order, "BMC %d: jobs ran in submission order", i)
	}
	mu.Unlock()
	for i, b := range bmcs {
		s := b.Sessions()
		assert.Equal(t, 1, s.MaxOpen, "BMC %d: never two sessions at once", i)
		assert.Equal(t, nJobs/nBMC, s.Logins, "BMC %d: one session per job", i)
		assert.Len(t, b.CallsTo(fake.MethodSetBootOverride), nJobs/nBMC, "BMC %d: each job's boot task sent once", i)
	}
	// Locks are released right after a job's last write, so poll for that.
	deadline := time.Now().Add(10 * time.Second)
	for {
		locks, err := store.List(context.Background(), "bmckit/systems/")
		require.NoError(t, err)
		if len(locks) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("BMC locks still held after every job completed: %d", len(locks))
		}
		runtime.Gosched()
	}
}

func TestReplicasMemstore(t *testing.T) { testReplicas(t, memstore.New()) }

func TestReplicasPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: pgtest.Schema(t, dsn)}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	testReplicas(t, s)
}

// A step that blocks in a slow BMC call for several lease durations keeps
// its lock: the lease is renewed in the background, and a second runner
// waiting on the same store never takes the job over.
func TestLeaseRenewedDuringLongStep(t *testing.T) {
	store := memstore.New()
	fleet := fake.NewFleet()
	url := "redfish://10.3.1.1/redfish/v1/Systems/1"
	b, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOn})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.SetHook(fake.MethodSetBootOverride, func(ctx context.Context, c fake.Call) error {
		once.Do(func() { close(entered) })
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	// Renewed every 200 ms; a waiting replica takes over only after 600 ms
	// without one: room for a loaded machine.
	const lease = 600 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runners []*job.Runner
	for i := 0; i < 2; i++ {
		r, err := job.NewRunner(job.Config{Store: store, Dialer: fleet, Credentials: labCreds, LeaseDuration: lease,
			ScanInterval: 10 * time.Millisecond, PollInterval: time.Millisecond, Owner: fmt.Sprintf("r%d", i)})
		require.NoError(t, err)
		runners = append(runners, r)
		go func() { _ = r.Start(ctx) }()
	}
	_, err = runners[0].Submit(context.Background(), "long", netboot(url))
	require.NoError(t, err)
	recv(t, entered)

	// Watch the lock's revision move: each move is a renewal while the
	// step is still blocked. Five renewals span more than 1.5 leases.
	lockKey := "bmckit/systems/10.3.1.1:443%2Fredfish%2Fv1%2FSystems%2F1"
	first, err := store.Get(context.Background(), lockKey)
	require.NoError(t, err)
	seen, renewals := first.Revision, 0
	deadline := time.Now().Add(20 * time.Second)
	for renewals < 5 {
		require.False(t, time.Now().After(deadline), "lock not renewed while the step blocked")
		rec, err := store.Get(context.Background(), lockKey)
		require.NoError(t, err, "lock released or lost while its job was running")
		if rec.Revision != seen {
			seen = rec.Revision
			renewals++
		}
		runtime.Gosched()
	}
	close(release)
	j := wait(t, runners[0], "long")
	assertCompleted(t, j, conditions.ResultSucceeded)
	s := b.Sessions()
	assert.Equal(t, 1, s.Logins, "the second runner never took the job over")
	assert.Equal(t, 1, s.MaxOpen)
	assert.Len(t, b.CallsTo(fake.MethodSetBootOverride), 1)
}

// lockWritesFail fails every write to system locks as a store whose connection
// timed out would, while job writes still work.
type lockWritesFail struct{ *memstore.Store }

func (s lockWritesFail) Update(ctx context.Context, k string, v []byte, rev int64) (int64, error) {
	if strings.Contains(k, "/systems/") {
		return 0, errors.New("dial tcp 127.0.0.1:5432: i/o timeout")
	}
	return s.Store.Update(ctx, k, v, rev)
}

// A runner that cannot renew its lease (store errors, not conflicts) stops
// touching the BMC before the lease runs out, so the runner that takes the
// job over is alone on the BMC.
func TestLapsedLeaseStopsTheWork(t *testing.T) {
	store, fleet := memstore.New(), fake.NewFleet()
	url := "redfish://10.3.9.1/redfish/v1/Systems/1"
	b, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOn})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	var once sync.Once
	b.SetHook(fake.MethodSetBootOverride, func(ctx context.Context, c fake.Call) error {
		first := false
		once.Do(func() { first = true; close(entered) })
		if first { // runner a's call hangs until its context ends
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mk := func(s storage.Store, owner string) *job.Runner {
		r, err := job.NewRunner(job.Config{Store: s, Dialer: fleet, Credentials: labCreds, LeaseDuration: 1200 * time.Millisecond,
			ScanInterval: 10 * time.Millisecond, PollInterval: time.Millisecond, Owner: owner})
		require.NoError(t, err)
		go func() { _ = r.Start(ctx) }()
		return r
	}
	a := mk(lockWritesFail{store}, "a")
	_, err = a.Submit(context.Background(), "j", netboot(url))
	require.NoError(t, err)
	recv(t, entered)
	r2 := mk(store, "b")
	j := wait(t, r2, "j")
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 1, b.Sessions().MaxOpen, "runner a left the BMC before runner b took over")
	assert.Equal(t, 2, b.Sessions().Logins)
}

// A BMC call that hangs is cut off at the task's deadline and the job fails
// as timed out, instead of holding the BMC forever.
func TestHungBMCCallEndsAtTaskTimeout(t *testing.T) {
	e := newEnv(t, job.Config{})
	url := "redfish://10.9.0.1/redfish/v1/Systems/1"
	b := e.addBMC(t, url, fake.Options{Power: bmc.PowerOn})
	b.SetHook(fake.MethodSetPower, func(ctx context.Context, c fake.Call) error { <-ctx.Done(); return ctx.Err() })
	e.start(t)
	spec := netboot(url)
	spec.Tasks = spec.Tasks[:1]
	spec.Tasks[0].Timeout = task.Duration{Duration: 200 * time.Millisecond}
	_, err := e.runner.Submit(context.Background(), "hung", spec)
	require.NoError(t, err)
	j := wait(t, e.runner, "hung")
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonTimedOut, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "timed out after 200ms")
}
