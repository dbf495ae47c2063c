package job_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// countingOutageStore counts List calls (the Runner's scans) made while the
// store is down.
type countingOutageStore struct {
	outageStore
	failedLists atomic.Int64
	hang        atomic.Bool   // List hangs until ctx is done (a hung store)
	hung        chan struct{} // receives when a List starts hanging (if the test has not been told yet)
}

func (s *countingOutageStore) List(ctx context.Context, p string) ([]storage.Record, error) {
	if s.hang.Load() {
		select {
		case s.hung <- struct{}{}:
		default: // the test waits for the first; other Lists (a scan, the lock sweep) hang too
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	recs, err := s.outageStore.List(ctx, p)
	if err != nil {
		s.failedLists.Add(1)
	}
	return recs, err
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // a poll interval, not a wait for state
	}
}

func TestRunnerNeedLeaderElectionIsFalse(t *testing.T) {
	r, err := job.NewRunner(job.Config{Store: memstore.New(), StepperConfig: job.StepperConfig{Dialer: fake.NewFleet()}})
	require.NoError(t, err)
	// A manager with leader election still starts the Runner on every
	// replica: the Store's system locks keep them apart.
	assert.False(t, r.NeedLeaderElection())
}

// Healthz: unhealthy before Start and after it returned; healthy through a
// store outage shorter than the lease; unhealthy once the outage outlasts
// the lease; healthy again when the store is back.
func TestRunnerHealthzFollowsLoopAndStore(t *testing.T) {
	const lease, scan = 30 * time.Second, time.Second
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := &countingOutageStore{outageStore: outageStore{Store: memstore.New()}}
	r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fake.NewFleet(), Clock: clk}, LeaseDuration: lease, ScanInterval: scan})
	require.NoError(t, err)

	err = r.Healthz(nil)
	require.ErrorIs(t, err, job.ErrUnhealthy)
	assert.Contains(t, err.Error(), "not started")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	eventually(t, "the runner to report healthy", func() bool { return r.Healthz(nil) == nil })

	// The store goes down: the next scan fails. Shorter than a lease, that
	// is healthy (the Runner pauses and resumes by itself).
	store.down.Store(true)
	clk.Advance(scan)
	eventually(t, "a failed scan", func() bool { return store.failedLists.Load() > 0 })
	clk.Advance(lease / 2)
	require.NoError(t, r.Healthz(nil))

	// Longer than a lease: unhealthy, and the error says why.
	eventually(t, "an unhealthy store report", func() bool {
		clk.Advance(scan) // the outage goes on
		err := r.Healthz(nil)
		return err != nil && strings.Contains(err.Error(), "the store has failed")
	})
	err = r.Healthz(nil)
	require.ErrorIs(t, err, job.ErrUnhealthy)
	assert.True(t, errors.Is(err, errDown), "the store's error is wrapped: %v", err)

	// Back up: the next scan succeeds and the Runner is healthy again.
	store.down.Store(false)
	eventually(t, "healthy after the outage", func() bool {
		clk.Advance(scan)
		return r.Healthz(nil) == nil
	})

	cancel()
	require.NoError(t, <-done)
	err = r.Healthz(nil)
	require.ErrorIs(t, err, job.ErrUnhealthy)
	assert.Contains(t, err.Error(), "stopped")
}

// A loop stuck in a store call that never returns is unhealthy once it has
// not turned over for a lease.
func TestRunnerHealthzStuckLoop(t *testing.T) {
	const lease, scan = 30 * time.Second, time.Second
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := &countingOutageStore{outageStore: outageStore{Store: memstore.New()}, hung: make(chan struct{}, 1)}
	r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fake.NewFleet(), Clock: clk}, LeaseDuration: lease, ScanInterval: scan})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	eventually(t, "the runner to report healthy", func() bool { return r.Healthz(nil) == nil })

	// From now on a scan hangs in List.
	store.hang.Store(true)
	clk.Advance(scan)
	<-store.hung // the loop's last turn was before this
	clk.Advance(lease / 2)
	require.NoError(t, r.Healthz(nil), "stuck for less than a lease")
	clk.Advance(lease)
	err = r.Healthz(nil)
	require.ErrorIs(t, err, job.ErrUnhealthy)
	assert.Contains(t, err.Error(), "has not turned over")
}
