package job_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// stateChanging are the fake's methods that change the server or the BMC.
var stateChanging = map[fake.Method]bool{
	fake.MethodSetPower: true, fake.MethodSetBootOverride: true, fake.MethodInsertMedia: true,
	fake.MethodEjectMedia: true, fake.MethodResetBMC: true, fake.MethodStartFirmwareUpdate: true,
	fake.MethodSetBIOSAttributes: true, fake.MethodSetLocatorLED: true, fake.MethodSendNMI: true,
}

// confirmWatch checks the Stepper's rule at the BMC: every state-changing
// request of a step comes after a write of that step that the host's store
// took (a compare-and-swap proving the step's copy current).
type confirmWatch struct {
	mu         sync.Mutex
	wrote      bool // a persist of the current step succeeded
	sent       int  // state-changing calls that reached the fake
	violations []string
}

func (w *confirmWatch) startStep() { w.mu.Lock(); w.wrote = false; w.mu.Unlock() }

func (w *confirmWatch) hook(_ context.Context, c fake.Call) error {
	if !stateChanging[c.Method] {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent++
	if !w.wrote {
		w.violations = append(w.violations, string(c.Method))
	}
	return nil
}

func (w *confirmWatch) persisted(persist job.PersistFunc) job.PersistFunc {
	return func(ctx context.Context, j *job.Job) error {
		err := persist(ctx, j)
		if err == nil {
			w.mu.Lock()
			w.wrote = true
			w.mu.Unlock()
		}
		return err
	}
}

// No state-changing request goes out in a step before a write of that step
// succeeded, for every kind and every way a step reaches a send: a first
// attempt, a retry scheduled after a transient error (every other
// state-changing call fails with 503 before it reaches the server), a resend
// of a dropped power request, a one-time override the BMC ignored, media.
func TestNoStateChangeBeforeAWrite(t *testing.T) {
	w := &confirmWatch{}
	var n atomic.Int64
	failEveryOther := func(ctx context.Context, c fake.Call) error {
		if !stateChanging[c.Method] {
			return nil
		}
		if err := w.hook(ctx, c); err != nil {
			return err
		}
		if n.Add(1)%2 == 1 {
			return bmc.Transient(errors.New("503 Service Unavailable"))
		}
		return nil
	}
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, PowerTransition: 3 * time.Second,
		Hooks: map[fake.Method]fake.Hook{fake.MethodAny: failEveryOther}}, job.StepperConfig{})
	j := newJob(powerOff, pxeOnce, powerOn,
		task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http://10.0.0.9/boot.iso"}},
		task.Spec{VirtualMedia: &task.VirtualMediaAction{Eject: true}},
		task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}})
	require.NoError(t, e.crd.persist(context.Background(), j))
	persist := w.persisted(e.crd.persist)
	for steps := 0; ; steps++ {
		require.Less(t, steps, 500, "job not done: %s", e.crd.stored)
		w.startStep()
		res, err := e.stepper.Step(context.Background(), e.crd.load(t), persist)
		require.NoError(t, err)
		if res.Done {
			break
		}
		e.clk.Advance(res.RequeueAfter)
	}
	assertCompleted(t, e.crd.load(t), conditions.ResultSucceeded)
	assert.Greater(t, w.sent, 8, "retries went out (every other state-changing call failed)")
	assert.Empty(t, w.violations, "state-changing requests sent before a write of their step")
}

// The bug of issue 33: a stale copy of a job (an informer cache after an
// API-server restart) whose task had a retry scheduled was acted on without
// a compare-and-swap. Now the copy's first write fails (409) before any BMC
// connection is opened, and nothing is sent.
func TestStaleCopyWithScheduledRetrySendsNothing(t *testing.T) {
	var fail atomic.Bool
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, Hooks: map[fake.Method]fake.Hook{
		fake.MethodSetPower: func(context.Context, fake.Call) error {
			if fail.Load() {
				return bmc.Transient(errors.New("503 Service Unavailable"))
			}
			return nil
		}}}, job.StepperConfig{})
	fail.Store(true)
	j := newJob(powerOff, powerOn)
	res, err := e.stepper.Step(context.Background(), j, e.crd.persist)
	require.NoError(t, err)
	stale := e.crd.load(t) // the retry's schedule, as a lagging cache keeps it
	require.NotNil(t, stale.Status.Tasks[0].NextAttemptTime, "a retry is scheduled")
	fail.Store(false)
	e.clk.Advance(res.RequeueAfter)

	// The current copy runs the job to the end (another replica, or this
	// one before the outage).
	done, _ := e.reconcile(t, e.crd.load(t), 100)
	assertCompleted(t, done, conditions.ResultSucceeded)
	require.Len(t, e.bmc.CallsTo(fake.MethodSetPower), 3, "the failed ForceOff, its retry, the power on")

	// Now the stale copy comes back from the cache, its retry time long
	// past: the store refuses its first write.
	e.bmc.ResetCalls()
	conflict := errors.New("409 Conflict: the object has been modified")
	_, err = e.stepper.Step(context.Background(), stale, func(context.Context, *job.Job) error { return conflict })
	require.ErrorIs(t, err, conflict)
	assert.Empty(t, e.bmc.Calls(), "a step that lost its compare-and-swap neither sent nor opened anything")
}

// A task whose time ran out reads the BMC back before it fails: a power-on
// that landed (here, while no step ran: a leader died and the next one
// took the job over after the task's timeout) is Succeeded, not TimedOut.
func TestTimedOutTaskReadsBack(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff, PowerTransition: 10 * time.Second}, job.StepperConfig{DefaultTaskTimeout: time.Minute})
	j := newJob(powerOn)
	_, err := e.stepper.Step(context.Background(), j, e.crd.persist)
	require.NoError(t, err)
	require.Equal(t, task.PhaseRequested, e.crd.load(t).Status.Tasks[0].Phase)
	e.clk.Advance(2 * time.Minute) // no step for two minutes; the power-on landed meanwhile
	res, err := e.stepper.Step(context.Background(), e.crd.load(t), e.crd.persist)
	require.NoError(t, err)
	require.True(t, res.Done)
	got := e.crd.load(t)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.Contains(t, got.Status.Tasks[0].Message, "read back when its time ran out")

	// And one whose effect is not there still fails TimedOut, saying so.
	e2 := newStepEnv(t, fake.Options{Power: bmc.PowerOff, Hooks: map[fake.Method]fake.Hook{
		fake.MethodSetPower: func(context.Context, fake.Call) error { return bmc.Transient(errors.New("503")) }}},
		job.StepperConfig{DefaultTaskTimeout: time.Minute})
	failed, _ := e2.reconcile(t, newJob(powerOn), 200)
	assertCompleted(t, failed, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonTimedOut, failed.Status.Reason)
}

// On the controller path only a step renews the job's lock: a job that
// waits longer than its lock lasts (here a retry backoff of 10 minutes
// under a 1-minute lease) is still stepped within the lock's validity, so
// no other job can take its system meanwhile.
func TestStepWithinTheLocksValidity(t *testing.T) {
	store := memstore.New()
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, Hooks: map[fake.Method]fake.Hook{
		fake.MethodSetPower: func(context.Context, fake.Call) error { return bmc.Transient(errors.New("503")) }}},
		job.StepperConfig{Retry: retry.Policy{Initial: 10 * time.Minute, Max: 10 * time.Minute},
			Locks: syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Owner: "r1"})})
	res, err := e.stepper.Step(context.Background(), newJob(powerOff), e.crd.persist)
	require.NoError(t, err)
	require.NotNil(t, e.crd.load(t).Status.Tasks[0].NextAttemptTime, "a retry in 10 minutes")
	assert.Positive(t, res.RequeueAfter)
	assert.LessOrEqual(t, res.RequeueAfter, 30*time.Second, "stepped again within half the lock's validity, not after the 10-minute backoff")
}

// A job whose own lock another process holds (a dead leader's) is looked at
// again when that lock runs out, not every LockRetryInterval: one read per
// job while it waits, and the takeover as soon as the lock has run out.
// Another job's lock is polled every LockRetryInterval (it may be released
// at any moment).
func TestWaitingForItsOwnLockRequeuesAtItsEnd(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	lockerA := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: e.clk, Owner: "replica-a"})
	b, err := job.NewStepper(job.StepperConfig{Dialer: e.bmc, Clock: e.clk, LockRetryInterval: 2 * time.Second,
		Locks: syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: e.clk, Owner: "replica-b"})})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(ctx) })
	j := newJob(powerOff)
	ep, err := bmc.ParseEndpoint(j.Spec.BMC)
	require.NoError(t, err)
	_, err = lockerA.Lock(ctx, ep.SystemKey(), j.Name)
	require.NoError(t, err)

	res, err := b.Step(ctx, j, e.crd.persist)
	require.NoError(t, err)
	require.True(t, res.Waiting)
	require.NotNil(t, res.Busy)
	assert.True(t, res.Busy.SameJob)
	assert.Equal(t, "replica-a", res.Busy.Owner)
	assert.Equal(t, time.Minute+500*time.Millisecond, res.RequeueAfter, "when the lock runs out, plus a quarter of LockRetryInterval")

	e.clk.Advance(res.RequeueAfter)
	res, err = b.Step(ctx, j, e.crd.persist)
	require.NoError(t, err)
	assert.False(t, res.Waiting, "taken over at its first look after the lock ran out")

	other := newJob(powerOn)
	other.Name, other.Spec.BMC = "j2", "redfish://10.1.0.2/redfish/v1/Systems/1"
	ep2, err := bmc.ParseEndpoint(other.Spec.BMC)
	require.NoError(t, err)
	_, err = lockerA.Lock(ctx, ep2.SystemKey(), "j9")
	require.NoError(t, err)
	res, err = b.Step(ctx, other, func(context.Context, *job.Job) error { return nil })
	require.NoError(t, err)
	require.True(t, res.Waiting)
	assert.False(t, res.Busy.SameJob)
	assert.Equal(t, 2*time.Second, res.RequeueAfter, "another job's lock: polled")
}
