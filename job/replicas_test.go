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
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

func TestReplicasMemstore(t *testing.T) { jobtest.Replicas(t, memstore.New()) }

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
		r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			Credentials:  labCreds,
			PollInterval: time.Millisecond,
		}, LeaseDuration: lease,
			ScanInterval: 10 * time.Millisecond, Owner: fmt.Sprintf("r%d", i)})
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
		r, err := job.NewRunner(job.Config{Store: s, StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			Credentials:  labCreds,
			PollInterval: time.Millisecond,
		}, LeaseDuration: 1200 * time.Millisecond,
			ScanInterval: 10 * time.Millisecond, Owner: owner})
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
