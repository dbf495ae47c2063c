package job_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

const sysA = "10.1.0.1:443/redfish/v1/Systems/1"

// Two controllers (two Steppers with their own objects) reconcile two jobs
// aimed at one system, interleaving their reconciles. With a syslock.Locker,
// one job runs to completion before the other touches the BMC, and the
// waiting one is told so (StepResult.Waiting) without a write.
func TestTwoSteppersOnOneSystemNeverInterleave(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	store := memstore.New()
	b := fake.New(fake.Options{Power: bmc.PowerOn, Clock: clk, PowerTransition: 2 * time.Second})
	var mu sync.Mutex
	var calls []string // job name per state-changing call, in order
	for _, m := range []fake.Method{fake.MethodSetPower, fake.MethodSetBootOverride} {
		b.SetHook(m, func(ctx context.Context, c fake.Call) error {
			call, ok := job.CallFromContext(ctx)
			require.True(t, ok, "BMC call without its job in ctx")
			mu.Lock()
			calls = append(calls, call.Job)
			mu.Unlock()
			return nil
		})
	}
	type ctrl struct {
		stepper *job.Stepper
		obj     *crd
		done    bool
		waits   int
	}
	var ctrls []*ctrl
	for i, name := range []string{"first", "second"} {
		s, err := job.NewStepper(job.StepperConfig{Dialer: b, Clock: clk,
			Locks: syslock.NewStoreLocker(store, syslock.StoreLockerConfig{Clock: clk})})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(ctx) })
		j := newJob(powerOff, pxeOnce, powerOn)
		j.Name = name
		j.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		c := &ctrl{stepper: s, obj: &crd{}}
		require.NoError(t, c.obj.persist(ctx, j))
		ctrls = append(ctrls, c)
	}
	for n := 0; n < 500 && !(ctrls[0].done && ctrls[1].done); n++ {
		var wait time.Duration = time.Hour
		for _, c := range ctrls { // both reconcile in every round
			if c.done {
				continue
			}
			writes := c.obj.writes
			res, err := c.stepper.Step(ctx, c.obj.load(t), c.obj.persist)
			require.NoError(t, err)
			if res.Waiting {
				c.waits++
				assert.Equal(t, writes, c.obj.writes, "a waiting step writes nothing")
			}
			c.done = res.Done
			wait = min(wait, res.RequeueAfter)
		}
		clk.Advance(wait)
	}
	require.True(t, ctrls[0].done && ctrls[1].done, "both jobs done")
	for _, c := range ctrls {
		assertCompleted(t, c.obj.load(t), conditions.ResultSucceeded)
	}
	assert.Positive(t, ctrls[1].waits, "the second job waited for the system")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 0, interleavings(calls), "calls: %v", calls)
	assert.Equal(t, "first", calls[0])
	assert.Equal(t, bmc.PowerOn, b.State().Power)
}

// interleavings counts pairs of jobs whose calls alternate: once job Y's
// call follows job X's, X must not appear again.
func interleavings(calls []string) int { return jobtest.Interleavings(calls) }

func TestInterleavingsCounter(t *testing.T) {
	assert.Equal(t, 0, interleavings([]string{"a", "a", "b", "b", "c"}))
	assert.Equal(t, 1, interleavings([]string{"a", "b", "a"}))
	assert.Equal(t, 2, interleavings([]string{"a", "b", "a", "b"}))
}

// A job deleted mid-run must not keep its system: Release frees it.
func TestStepperReleaseFreesTheSystem(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	clk := clock.NewFake(t0)
	// The power-off never lands (the fake clock stands still): j keeps the
	// system.
	b := fake.New(fake.Options{Power: bmc.PowerOn, PowerTransition: time.Second, Clock: clk})
	s, err := job.NewStepper(job.StepperConfig{Dialer: b, Clock: clk, Locks: syslock.NewStoreLocker(store, syslock.StoreLockerConfig{Clock: clk})})
	require.NoError(t, err)
	defer s.Close(ctx)
	j := newJob(powerOff, powerOn)
	res, err := s.Step(ctx, j, func(context.Context, *job.Job) error { return nil })
	require.NoError(t, err)
	require.False(t, res.Waiting)
	other := newJob(powerOff)
	other.Name = "other"
	res, err = s.Step(ctx, other, func(context.Context, *job.Job) error { return nil })
	require.NoError(t, err)
	require.True(t, res.Waiting, "the system is held by j")
	require.NoError(t, s.Release(ctx, j.Name, j.Spec.BMC))
	res, err = s.Step(ctx, other, func(context.Context, *job.Job) error { return nil })
	require.NoError(t, err)
	assert.False(t, res.Waiting, "free after Release")
	assert.Equal(t, 1, b.Sessions().Open, "j's session was closed by Release; other's is open")
	assert.Equal(t, 2, b.Sessions().Logins)
}

// A store that cannot be read makes Step fail (the host retries) without
// touching the BMC.
func TestStepLockErrorTouchesNothing(t *testing.T) {
	ctx := context.Background()
	b := fake.New(fake.Options{Power: bmc.PowerOn})
	s, err := job.NewStepper(job.StepperConfig{Dialer: b, Locks: failingLocker{}})
	require.NoError(t, err)
	defer s.Close(ctx)
	j := newJob(powerOff)
	_, err = s.Step(ctx, j, func(context.Context, *job.Job) error { t.Fatal("persisted"); return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), sysA)
	assert.Empty(t, b.Calls())
}

type failingLocker struct{}

func (failingLocker) Lock(context.Context, string, string) (time.Duration, error) {
	return 0, fmt.Errorf("dial tcp 127.0.0.1:5432: connection refused")
}
func (failingLocker) Unlock(context.Context, string, string) error { return nil }

var _ = task.Spec{}
