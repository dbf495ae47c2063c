package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/contrib/kubernetes/secretcreds"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

const system1 = "redfish://10.0.0.5/redfish/v1/Systems/1"

// A netboot BMCJob runs to the end through Reconcile: the stored object says
// Completed=True, Running=False, Result=Succeeded, for the job and each
// task, for the object's generation; the BMC netbooted; one session was
// used and closed; the system's Lease is released; the finalizer is gone;
// and the password appears in no log line and nowhere in the object.
func TestNetbootEndToEnd(t *testing.T) {
	const password = "netboot-Pw-7731"
	fleet := fake.NewFleet()
	b, err := fleet.AddNew(system1, fake.Options{Username: "admin", Password: password, Power: bmc.PowerOn, PowerTransition: 5 * time.Millisecond})
	require.NoError(t, err)
	c := newClient(t, secret("bmc-5", "admin", password), bmcJob("netboot", netbootSpec(system1, "bmc-5")))
	r := &controller.Reconciler[*v1alpha1.BMCJob]{NewObject: newBMCJob, Client: c, Stepper: newStepper(t, job.StepperConfig{
		Dialer: fleet, Credentials: secretcreds.Resolver{Reader: c}, Locks: newLeaseLocker(t, c), Logger: testLogger(t),
	})}

	o := drive(t, r, c, "netboot")

	st := o.Status.Status
	completed := conditions.Get(st.Conditions, conditions.TypeCompleted)
	require.NotNil(t, completed)
	assert.Equal(t, conditions.True, completed.Status)
	assert.Equal(t, int64(1), completed.ObservedGeneration)
	running := conditions.Get(st.Conditions, conditions.TypeRunning)
	require.NotNil(t, running, "Running is kept, as False")
	assert.Equal(t, conditions.False, running.Status)
	assert.Equal(t, conditions.ResultSucceeded, st.Result)
	assert.Equal(t, int64(1), st.ObservedGeneration)
	require.Len(t, st.Tasks, 3)
	for i, ts := range st.Tasks {
		assert.True(t, conditions.IsTrue(ts.Conditions, conditions.TypeCompleted), "task %d: %+v", i, ts.Conditions)
		assert.False(t, conditions.IsTrue(ts.Conditions, conditions.TypeRunning), "task %d: %+v", i, ts.Conditions)
		assert.Equal(t, conditions.ResultSucceeded, ts.Result, "task %d", i)
	}
	assert.Equal(t, 3, st.CurrentTask)
	assert.Empty(t, o.Finalizers)

	bs := b.State()
	assert.Equal(t, bmc.PowerOn, bs.Power)
	assert.Equal(t, bmc.BootDevicePXE, bs.LastBootDevice, "the server netbooted")
	sess := b.Sessions()
	assert.Equal(t, 1, sess.Logins, "one session for the whole job")
	assert.Equal(t, 0, sess.Open, "closed when the job completed")

	l := lease(t, c, "10.0.0.5:443/redfish/v1/Systems/1")
	if l != nil {
		assert.Nil(t, l.Spec.HolderIdentity, "the system's Lease is released")
	}
	data, err := json.Marshal(o)
	require.NoError(t, err)
	assert.NotContains(t, string(data), password)
	assert.NotEmpty(t, logged(t))
	assert.NotContains(t, logged(t), password)
}

// Two BMCJobs aimed at one system, reconciled concurrently (as a controller
// with MaxConcurrentReconciles > 1 does), never interleave their calls on
// the BMC: with the Lease-backed locker, with the store locker, and with the
// store locker shared with a Runner that runs a job on the same system.
func TestOneSystemNeverInterleaves(t *testing.T) {
	for _, mode := range []string{"lease", "store", "store+runner"} {
		t.Run(mode, func(t *testing.T) {
			fleet := fake.NewFleet()
			b, err := fleet.AddNew(system1, fake.Options{Power: bmc.PowerOn, PowerTransition: 3 * time.Millisecond, Latency: 200 * time.Microsecond})
			require.NoError(t, err)
			var mu sync.Mutex
			var calls []string
			for _, m := range []fake.Method{fake.MethodSetPower, fake.MethodSetBootOverride} {
				b.SetHook(m, func(ctx context.Context, _ fake.Call) error {
					call, _ := job.CallFromContext(ctx)
					mu.Lock()
					calls = append(calls, call.Job)
					mu.Unlock()
					return nil
				})
			}
			c := newClient(t, bmcJob("a", netbootSpec(system1, "")), bmcJob("b", netbootSpec(system1, "")))
			store := memstore.New()
			var locks syslock.Locker = newLeaseLocker(t, c)
			if mode != "lease" {
				locks = syslock.NewStoreLocker(store, syslock.StoreLockerConfig{})
			}
			r := &controller.Reconciler[*v1alpha1.BMCJob]{NewObject: newBMCJob, Client: c, Stepper: newStepper(t, job.StepperConfig{Dialer: fleet, Locks: locks})}

			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for _, name := range []string{"a", "b"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := driveErr(r, c, name, nil); err != nil {
						errs <- err
					}
				}()
			}
			var runnerJob *job.Job
			if mode == "store+runner" {
				runner, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fleet, PollInterval: time.Millisecond}, ScanInterval: 5 * time.Millisecond})
				require.NoError(t, err)
				rctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- runner.Start(rctx) }()
				defer func() {
					cancel()
					<-done
				}()
				_, err = runner.Submit(context.Background(), "runner-job", netbootSpec(system1, ""))
				require.NoError(t, err)
				wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer wcancel()
				runnerJob, err = runner.Wait(wctx, "runner-job")
				require.NoError(t, err)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			for _, name := range []string{"a", "b"} {
				assert.Equal(t, conditions.ResultSucceeded, get(t, c, name).Status.Result, name)
			}
			if runnerJob != nil {
				assert.Equal(t, conditions.ResultSucceeded, runnerJob.Status.Result)
			}
			mu.Lock()
			defer mu.Unlock()
			jobs := map[string]bool{}
			for _, j := range calls {
				jobs[j] = true
			}
			want := 2
			if runnerJob != nil {
				want = 3
			}
			require.Len(t, jobs, want, "every job acted on the BMC: %v", calls)
			assert.Equal(t, 0, jobtest.Interleavings(calls), "calls on the BMC, by job: %v", calls)
			assert.Equal(t, 1, b.Sessions().MaxOpen, "never two sessions at once")
		})
	}
}

// rotatingDialer stands for a BMC whose password an operator rotates: it
// accepts only the current password, and records which password each dial
// used (as an index: the test never prints a password).
type rotatingDialer struct {
	fleet     *fake.Fleet
	mu        sync.Mutex
	passwords []string // every password so far; the last is current
	dials     []int    // per dial, the index of the password it used (-1: unknown)
}

func (d *rotatingDialer) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	d.mu.Lock()
	used := -1
	for i, p := range d.passwords {
		if p == creds.Password {
			used = i
		}
	}
	d.dials = append(d.dials, used)
	current := used == len(d.passwords)-1
	d.mu.Unlock()
	if !current {
		return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: bmc.ErrUnauthorized}
	}
	return d.fleet.Dial(ctx, ep, creds)
}

func (d *rotatingDialer) rotate(p string) {
	d.mu.Lock()
	d.passwords = append(d.passwords, p)
	d.mu.Unlock()
}

// The Secret is rotated (and the BMC's password with it) while a job waits
// for a power change: the next step resolves the new password, the old
// session is closed, a new one logs in with the new password, and the job
// succeeds. Without the rotation picked up, the BMC would refuse the old
// password (Unauthorized fails the job).
func TestCredentialRotationIsPickedUp(t *testing.T) {
	const pw1, pw2 = "rotation-Pw-1111", "rotation-Pw-2222"
	bmcClock := clock.NewFake(time.Now())
	fleet := fake.NewFleet()
	b, err := fleet.AddNew(system1, fake.Options{Power: bmc.PowerOn, PowerTransition: time.Minute, Clock: bmcClock})
	require.NoError(t, err)
	d := &rotatingDialer{fleet: fleet, passwords: []string{pw1}}
	c := newClient(t, secret("bmc-5", "admin", pw1), bmcJob("rotate", netbootSpec(system1, "bmc-5")))
	r := &controller.Reconciler[*v1alpha1.BMCJob]{NewObject: newBMCJob, Client: c, Stepper: newStepper(t, job.StepperConfig{
		Dialer: d, Credentials: secretcreds.Resolver{Reader: c}, Locks: newLeaseLocker(t, c), Logger: testLogger(t),
	})}

	// The power off is sent and waits for the BMC (its clock stands still).
	reconcileOnce(t, r, "rotate")
	o := get(t, c, "rotate")
	require.Len(t, o.Status.Tasks, 3)
	require.Equal(t, task.PhaseRequested, o.Status.Tasks[0].Phase, "the power off was sent")
	require.Equal(t, 1, b.Sessions().Open)

	// Rotate: the BMC takes only the new password from now, and the Secret
	// has it.
	d.rotate(pw2)
	sec := secret("bmc-5", "admin", pw2)
	require.NoError(t, c.Update(context.Background(), sec))
	// The BMC's power changes land a minute after each reconcile.
	o, err = driveErr(r, c, "rotate", func() { bmcClock.Advance(time.Minute) })
	require.NoError(t, err)
	assert.Equal(t, conditions.ResultSucceeded, o.Status.Result, "status: %+v", o.Status)
	d.mu.Lock()
	assert.Equal(t, []int{0, 1}, d.dials, "one dial with the old password, then one with the new")
	d.mu.Unlock()
	sess := b.Sessions()
	assert.Equal(t, 2, sess.Logins)
	assert.Equal(t, 1, sess.MaxOpen, "the old session was closed before the new one opened")
	assert.Equal(t, 0, sess.Open)
	for _, p := range []string{pw1, pw2} {
		assert.NotContains(t, logged(t), p)
	}
}

// Deleting a BMCJob in the middle of its job releases its BMC session and
// its system's Lease, and lets the deletion finish; another job on the same
// system then starts at once.
func TestDeleteMidJobReleasesSession(t *testing.T) {
	bmcClock := clock.NewFake(time.Now())
	fleet := fake.NewFleet()
	b, err := fleet.AddNew(system1, fake.Options{Power: bmc.PowerOff, PowerTransition: time.Hour, Clock: bmcClock})
	require.NoError(t, err)
	powerOn := job.Spec{BMC: system1, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}}
	c := newClient(t, bmcJob("first", powerOn), bmcJob("second", powerOn))
	r := &controller.Reconciler[*v1alpha1.BMCJob]{NewObject: newBMCJob, Client: c, Stepper: newStepper(t, job.StepperConfig{Dialer: fleet, Locks: newLeaseLocker(t, c)})}
	const sys = "10.0.0.5:443/redfish/v1/Systems/1"

	res := reconcileOnce(t, r, "first")
	assert.Positive(t, res.RequeueAfter)
	o := get(t, c, "first")
	require.Contains(t, o.Finalizers, v1alpha1.GroupVersion.Group+"/release-bmc")
	require.Equal(t, task.PhaseRequested, o.Status.Tasks[0].Phase, "the power on was sent and waits")
	require.Equal(t, 1, b.Sessions().Open)
	l := lease(t, c, sys)
	require.NotNil(t, l)
	require.NotNil(t, l.Spec.HolderIdentity)
	require.True(t, strings.HasPrefix(*l.Spec.HolderIdentity, ns+"/first@"), *l.Spec.HolderIdentity)

	// "second" waits for the system meanwhile.
	reconcileOnce(t, r, "second")
	assert.Empty(t, get(t, c, "second").Status.Tasks, "second has not started")

	require.NoError(t, c.Delete(context.Background(), o))
	require.NotNil(t, get(t, c, "first").DeletionTimestamp, "the finalizer holds the object")
	reconcileOnce(t, r, "first")

	err = c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "first"}, &v1alpha1.BMCJob{})
	assert.True(t, apierrors.IsNotFound(err), "the object is gone: %v", err)
	assert.Equal(t, 0, b.Sessions().Open, "the session was closed")
	l = lease(t, c, sys)
	require.NotNil(t, l)
	assert.Nil(t, l.Spec.HolderIdentity, "the system's Lease was released")

	reconcileOnce(t, r, "second")
	second := get(t, c, "second")
	require.Len(t, second.Status.Tasks, 1)
	assert.Equal(t, task.PhaseRequested, second.Status.Tasks[0].Phase, "second started at once")
	l = lease(t, c, sys)
	require.NotNil(t, l.Spec.HolderIdentity)
	assert.True(t, strings.HasPrefix(*l.Spec.HolderIdentity, ns+"/second@"), *l.Spec.HolderIdentity)
}

// "At once" is never a zero RequeueAfter, which controller-runtime reads as
// "do not requeue"; Done is.
func TestRequeueMapping(t *testing.T) {
	assert.Equal(t, ctrl.Result{}, controller.Requeue(job.StepResult{Done: true}))
	assert.Equal(t, ctrl.Result{RequeueAfter: controller.RequeueAtOnce}, controller.Requeue(job.StepResult{}))
	assert.Positive(t, controller.RequeueAtOnce)
	assert.Equal(t, ctrl.Result{RequeueAfter: 2 * time.Second}, controller.Requeue(job.StepResult{RequeueAfter: 2 * time.Second, Waiting: true}))
}

// A reconcile that reads a stale object (the cache has not seen our last
// status patch yet: here, a copy whose power-off had a retry scheduled after
// a 503, as in issue 33) steps on the old status, but its first write carries
// the old resourceVersion: it conflicts, nothing is written over the newer
// status, nothing is sent to the BMC, and the Reconciler asks to be called
// again after a short backoff. Its next step reads the object from the API
// server (APIReader) instead of the cache, and goes on without a conflict.
func TestStaleObjectNeverOverwritesNewerStatus(t *testing.T) {
	bmcClock := clock.NewFake(time.Now())
	fleet := fake.NewFleet()
	var fails atomic.Int32
	fails.Store(1)
	b, err := fleet.AddNew(system1, fake.Options{Power: bmc.PowerOn, PowerTransition: time.Minute, Clock: bmcClock,
		Hooks: map[fake.Method]fake.Hook{fake.MethodSetPower: func(context.Context, fake.Call) error {
			if fails.Add(-1) >= 0 {
				return bmc.Transient(errors.New("503 Service Unavailable"))
			}
			return nil
		}}})
	require.NoError(t, err)
	c := newClient(t, bmcJob("stale", netbootSpec(system1, "")))
	r := &controller.Reconciler[*v1alpha1.BMCJob]{NewObject: newBMCJob, Client: c, Stepper: newStepper(t, job.StepperConfig{Dialer: fleet, Clock: bmcClock})}

	reconcileOnce(t, r, "stale") // power off answered 503: a retry scheduled
	stale := get(t, c, "stale")
	require.NotNil(t, stale.Status.Tasks[0].NextAttemptTime, "status: %+v", stale.Status)
	bmcClock.Advance(time.Minute)
	reconcileOnce(t, r, "stale") // the retry: power off sent
	bmcClock.Advance(time.Minute)
	reconcileOnce(t, r, "stale") // power off landed, boot device set, power on sent
	current := get(t, c, "stale")
	require.Equal(t, 2, current.Status.CurrentTask, "status: %+v", current.Status)
	require.NotEqual(t, stale.ResourceVersion, current.ResourceVersion)

	// A client whose reads return the stale object, as a lagging cache does.
	staleReads := interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if o, ok := obj.(*v1alpha1.BMCJob); ok && key.Name == "stale" {
				stale.DeepCopyInto(o)
				return nil
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	})
	rs := &controller.Reconciler[*v1alpha1.BMCJob]{NewObject: newBMCJob, Client: staleReads, Stepper: r.Stepper}
	sent := len(b.CallsTo(fake.MethodSetPower)) + len(b.CallsTo(fake.MethodSetBootOverride))
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "stale"}}
	res, err := rs.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.RequeueAfter, 80*time.Millisecond, "a backoff, not at once")
	assert.LessOrEqual(t, res.RequeueAfter, 120*time.Millisecond, "the first conflict's backoff: 100 ms ±20%%")
	assert.EqualValues(t, 1, rs.Conflicts())
	assert.Equal(t, sent, len(b.CallsTo(fake.MethodSetPower))+len(b.CallsTo(fake.MethodSetBootOverride)), "the stale step sent nothing")
	assert.Len(t, b.CallsTo(fake.MethodSetPower), 3, "the power off answered 503, its retry, the power on: no second power off")

	after := get(t, c, "stale")
	assert.Equal(t, current.ResourceVersion, after.ResourceVersion, "nothing was written")
	assert.Equal(t, current.Status, after.Status)

	// A second conflict in a row waits longer.
	res, err = rs.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.RequeueAfter, 160*time.Millisecond, "200 ms ±20%%")

	// With an APIReader, the step after a conflict reads the object from
	// the API server, not the lagging cache: no conflict.
	rs.APIReader = c
	_, err = rs.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.EqualValues(t, 2, rs.Conflicts(), "no new conflict")

	// With the cache caught up, the job goes on to the end.
	o, err := driveErr(r, c, "stale", func() { bmcClock.Advance(time.Minute) })
	require.NoError(t, err)
	assert.Equal(t, conditions.ResultSucceeded, o.Status.Result)
}

// WakeFunc turns the Stepper's wake of a BMCJob's job into a GenericEvent
// for that object, and never blocks: a wake that finds the channel full is
// dropped (the job's RequeueAfter steps it anyway).
func TestWakeFunc(t *testing.T) {
	ch := make(chan event.GenericEvent, 1)
	wake := controller.WakeFunc(newBMCJob, ch)
	wake("metal/netboot")
	wake("metal/other") // full: dropped, without blocking
	wake("no-namespace")
	require.Len(t, ch, 1)
	ev := <-ch
	assert.Equal(t, "metal", ev.Object.GetNamespace())
	assert.Equal(t, "netboot", ev.Object.GetName())
	assert.Empty(t, ch)
}
