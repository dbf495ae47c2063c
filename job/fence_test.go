package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// A Stepper without a locker is refused, with a message that names the
// opt-out; the opt-out builds.
func TestNewStepperRequiresLocks(t *testing.T) {
	b := fake.New(fake.Options{})
	_, err := job.NewStepper(job.StepperConfig{Dialer: b})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "StepperConfig.Locks")
	assert.Contains(t, err.Error(), "syslock.NoLocking")
	s, err := job.NewStepper(job.StepperConfig{Dialer: b, Locks: syslock.NoLocking})
	require.NoError(t, err)
	_ = s.Close(context.Background())
}

// Two processes stepping the same job (two controller replicas without
// leader election) never both pass the lock: the second waits until the
// first's lease was seen unchanged for a whole lease, then takes it over,
// and the first is refused from then on.
func TestStoreLockerOneJobTwoProcesses(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	store := memstore.New()
	a := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: clk, Owner: "replica-a"})
	b := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: clk, Owner: "replica-b"})

	_, err := a.Lock(ctx, sysA, "netboot")
	require.NoError(t, err)
	_, err = b.Lock(ctx, sysA, "netboot")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy, "the same job, another process")
	assert.Equal(t, "netboot", busy.Holder)
	assert.Equal(t, "replica-a", busy.Owner)
	require.NoError(t, b.Unlock(ctx, sysA, "other-job"), "another job's unlock does nothing")
	info, err := syslock.Read(ctx, store, sysA)
	require.NoError(t, err)
	assert.Equal(t, "replica-a", info.Owner)

	clk.Advance(time.Minute) // a stopped renewing
	_, err = b.Lock(ctx, sysA, "netboot")
	require.NoError(t, err, "unchanged for a whole lease: b continues the job")
	_, err = a.Lock(ctx, sysA, "netboot")
	require.ErrorIs(t, err, syslock.ErrBusy, "a lost it")
}

// Lockers (and Runners) that keep their jobs under different key prefixes
// still exclude each other on a system: lock keys come from the system
// alone.
func TestLockersUnderTwoPrefixesExclude(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	store := memstore.New()
	x := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{Clock: clk, KeyPrefix: "tenant-x/"})
	y := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{Clock: clk, KeyPrefix: "tenant-y/"})
	_, err := x.Lock(ctx, sysA, "a")
	require.NoError(t, err)
	_, err = y.Lock(ctx, sysA, "b")
	require.ErrorIs(t, err, syslock.ErrBusy)
	_, err = y.Lock(ctx, sysA, "a")
	require.ErrorIs(t, err, syslock.ErrBusy, "a job of the same name in another namespace is another job")
	require.NoError(t, y.Unlock(ctx, sysA, "a"), "does nothing to x's lock")
	info, err := syslock.Read(ctx, store, sysA)
	require.NoError(t, err)
	assert.Equal(t, "a", info.Holder)
	assert.Equal(t, "tenant-x/", info.HolderKeyPrefix)
	require.NoError(t, x.Unlock(ctx, sysA, "a"))
	_, err = y.Lock(ctx, sysA, "b")
	require.NoError(t, err)
}

// A Runner under another key prefix does not touch a system while a
// StoreLocker's job holds it: its job's first BMC call comes after the
// unlock.
func TestRunnerWaitsForLockerOfAnotherPrefix(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := memstore.New()
	locker := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{KeyPrefix: "controller/"})
	_, err := locker.Lock(ctx, sysA, "crd-job")
	require.NoError(t, err)

	refused := make(chan struct{}, 1)
	watched := &claimWatch{Store: store, refused: refused}
	b := fake.New(fake.Options{Power: bmc.PowerOn})
	var unlocked time.Time
	var mu sync.Mutex
	var first time.Time
	b.SetHook(fake.MethodAny, func(context.Context, fake.Call) error {
		mu.Lock()
		if first.IsZero() {
			first = time.Now()
		}
		mu.Unlock()
		return nil
	})
	r, err := job.NewRunner(job.Config{Store: watched, StepperConfig: job.StepperConfig{Dialer: b}, KeyPrefix: "runner/", ScanInterval: 10 * time.Millisecond, LeaseDuration: 3 * time.Second})
	require.NoError(t, err)
	_, err = r.Submit(ctx, "r1", job.Spec{BMC: "redfish://" + sysA, Tasks: []task.Spec{powerOff}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	select {
	case <-refused: // the runner tried the system and found it held
	case <-time.After(time.Minute):
		t.Fatal("the runner never tried to claim the system")
	}
	mu.Lock()
	assert.True(t, first.IsZero(), "a BMC call while another namespace's job held the system")
	unlocked = time.Now()
	mu.Unlock()
	require.NoError(t, locker.Unlock(ctx, sysA, "crd-job"))
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	j, err := r.Wait(wctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, conditions.ResultSucceeded, j.Status.Result)
	mu.Lock()
	assert.False(t, first.Before(unlocked), "first BMC call %v before the unlock %v", first, unlocked)
	mu.Unlock()
	cancel()
	require.NoError(t, <-done)
}

// claimWatch signals when a lock create found the lock taken.
type claimWatch struct {
	storage.Store
	refused chan struct{}
}

func (w *claimWatch) Create(ctx context.Context, key string, value []byte) (int64, error) {
	rev, err := w.Store.Create(ctx, key, value)
	if errors.Is(err, storage.ErrExists) && strings.HasPrefix(key, syslock.KeyPrefix) {
		select {
		case w.refused <- struct{}{}:
		default:
		}
	}
	return rev, err
}

// A step paused (here: held in a BMC hook, as by SIGSTOP or a long GC)
// until its lock's validity lapsed sends nothing when it resumes: the
// fence refuses the request right before it would go out, whatever else
// noticed. The task is neither failed nor counted as sent, and the next
// step (which locks again) sends it once.
func TestStepperFenceRefusesAfterAPause(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	b := fake.New(fake.Options{Power: bmc.PowerOn, Clock: clk})
	entered, resume := holdFirst(b, fake.MethodSetPower)
	s, err := job.NewStepper(job.StepperConfig{Dialer: b, Clock: clk,
		Locks: syslock.NewStoreLocker(memstore.New(), syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: clk})})
	require.NoError(t, err)
	defer s.Close(ctx)
	obj := &crd{}
	require.NoError(t, obj.persist(ctx, newJob(powerOff)))

	type result struct {
		res job.StepResult
		err error
	}
	out := make(chan result, 1)
	go func() {
		res, err := s.Step(ctx, obj.load(t), obj.persist)
		out <- result{res, err}
	}()
	<-entered
	clk.Advance(time.Minute) // the pause outlasts the lock's validity
	close(resume)
	r := <-out
	require.ErrorIs(t, r.err, bmc.ErrFenced)
	var fe *syslock.FencedError
	require.ErrorAs(t, r.err, &fe)
	assert.Equal(t, sysA, fe.System)
	assert.Equal(t, bmc.PowerOn, b.State().Power, "the fenced request took no effect")

	j := obj.load(t)
	ts := j.Status.Tasks[0]
	assert.Equal(t, task.PhaseStarted, ts.Phase, "resumable: not sent, not failed")
	assert.Empty(t, ts.LastError)
	assert.False(t, j.Completed())

	for n := 0; n < 50 && !j.Completed(); n++ {
		res, err := s.Step(ctx, j, obj.persist)
		require.NoError(t, err)
		clk.Advance(res.RequeueAfter)
		j = obj.load(t)
	}
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 1, applied(b, fake.MethodSetPower), "the power off went out once, under the renewed lock")
}

// holdFirst holds the first call of method m to b (as a SIGSTOP or a long
// GC would) until resume is closed; entered closes when it is held.
func holdFirst(b *fake.BMC, m fake.Method) (entered, resume chan struct{}) {
	entered, resume = make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.SetHook(m, func(context.Context, fake.Call) error {
		once.Do(func() {
			close(entered)
			<-resume
		})
		return nil
	})
	return entered, resume
}

// applied counts the calls of method m to b that succeeded.
func applied(b *fake.BMC, m fake.Method) int {
	n := 0
	for _, c := range b.CallsTo(m) {
		if c.Err == nil {
			n++
		}
	}
	return n
}

// A locker whose store hangs for longer than the lease: the lock's validity
// counts from before the call, so the step that follows sends nothing.
func TestStepperFenceCountsFromBeforeTheLock(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	b := fake.New(fake.Options{Power: bmc.PowerOn, Clock: clk})
	hang := &hangingLocker{Locker: syslock.NewStoreLocker(memstore.New(), syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: clk}),
		during: func() { clk.Advance(2 * time.Minute) }}
	s, err := job.NewStepper(job.StepperConfig{Dialer: b, Clock: clk, Locks: hang})
	require.NoError(t, err)
	defer s.Close(ctx)
	obj := &crd{}
	require.NoError(t, obj.persist(ctx, newJob(powerOff)))
	_, err = s.Step(ctx, obj.load(t), obj.persist)
	require.ErrorIs(t, err, bmc.ErrFenced)
	assert.Empty(t, b.CallsTo(fake.MethodSetPower), "no request after a lock call that outlasted the lease")
	assert.Equal(t, bmc.PowerOn, b.State().Power)
}

// hangingLocker runs during inside Lock, before the inner locker answers
// (a store call that hangs while the clock goes on).
type hangingLocker struct {
	syslock.Locker
	during func()
}

func (h *hangingLocker) Lock(ctx context.Context, system, holder string) (time.Duration, error) {
	h.during()
	return h.Locker.Lock(ctx, system, holder)
}

// casObj is a host's object stored by compare-and-swap (an optimistic
// lock): a persist from a copy read at an older revision fails.
type casObj struct {
	mu   sync.Mutex
	data []byte
	rev  int
}

func (o *casObj) load(t *testing.T) (*job.Job, func(context.Context, *job.Job) error) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var j job.Job
	require.NoError(t, json.Unmarshal(o.data, &j))
	rev := o.rev
	return &j, func(_ context.Context, j *job.Job) error {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.rev != rev {
			return fmt.Errorf("conflict: stored at %d, copy read at %d", o.rev, rev)
		}
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		o.data, o.rev, rev = b, o.rev+1, o.rev+1
		return nil
	}
}

// A controller replica stepping a stale copy of a job that another replica
// completed and unlocked meanwhile takes the free system for it, and must
// not act: it stores the job first (syslock.Taker), its compare-and-swap fails,
// and the BMC hears nothing from it.
func TestStaleCopyOfACompletedJobDoesNotAct(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	store := memstore.New()
	b := fake.New(fake.Options{Power: bmc.PowerOff, Clock: clk, PowerTransition: 2 * time.Second})
	newReplica := func(owner string) *job.Stepper {
		s, err := job.NewStepper(job.StepperConfig{Dialer: b, Clock: clk,
			Locks: syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: clk, Owner: owner})})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(ctx) })
		return s
	}
	a, c := newReplica("replica-a"), newReplica("replica-c")
	obj := &casObj{}
	first, _ := json.Marshal(newJob(powerOn))
	obj.data = first

	// a starts the job (power on sent, waiting for it to land) and keeps
	// its copy; then it stops stepping.
	j, persist := obj.load(t)
	_, err := a.Step(ctx, j, persist)
	require.NoError(t, err)
	stale, stalePersist := obj.load(t)
	require.Equal(t, task.PhaseRequested, stale.Status.Tasks[0].Phase)

	// c takes over after the lease and completes the job.
	clk.Advance(time.Minute)
	for n := 0; n < 50; n++ {
		j, persist := obj.load(t)
		if j.Completed() {
			break
		}
		res, err := c.Step(ctx, j, persist)
		require.NoError(t, err)
		clk.Advance(max(res.RequeueAfter, time.Millisecond))
	}
	done, _ := obj.load(t)
	assertCompleted(t, done, conditions.ResultSucceeded)
	info, err := syslock.Read(ctx, store, sysA)
	require.NoError(t, err)
	require.Empty(t, info.Holder, "unlocked at completion")

	// a steps its stale copy: the system is free, so it takes it...
	calls := len(b.Calls())
	_, err = a.Step(ctx, stale, stalePersist)
	require.Error(t, err, "a stale copy must fail at the confirming write")
	assert.Contains(t, err.Error(), "conflict")
	assert.Equal(t, calls, len(b.Calls()), "no BMC call for a completed job")
	// ...and gives it back: a completed job holds no lock (issue 33: 4-15
	// of 20 systems stayed locked by completed jobs after an outage).
	info, err = syslock.Read(ctx, store, sysA)
	require.NoError(t, err)
	assert.Empty(t, info.Holder, "the lock taken for the stale copy was given back")
}
