package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// crd plays the host's own object: Step's persist writes the job into it as
// a controller would patch a CRD status.
type crd struct {
	mu       sync.Mutex
	stored   []byte
	writes   int
	failNext error
}

func (c *crd) persist(_ context.Context, j *job.Job) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failNext != nil {
		err := c.failNext
		c.failNext = nil
		return err
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	c.stored = b
	c.writes++
	return nil
}

func (c *crd) load(t *testing.T) *job.Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	var j job.Job
	require.NoError(t, json.Unmarshal(c.stored, &j))
	return &j
}

type stepEnv struct {
	clk     *clock.Fake
	bmc     *fake.BMC
	stepper *job.Stepper
	crd     *crd
}

func newStepEnv(t *testing.T, opts fake.Options, cfg job.StepperConfig) *stepEnv {
	t.Helper()
	return newStepEnvDialing(t, opts, cfg, nil)
}

// newStepEnvDialing is newStepEnv with the Stepper dialing through
// wrap(the fake BMC), unless wrap is nil.
func newStepEnvDialing(t *testing.T, opts fake.Options, cfg job.StepperConfig, wrap func(bmc.Dialer) bmc.Dialer) *stepEnv {
	t.Helper()
	e := &stepEnv{clk: clock.NewFake(t0), crd: &crd{}}
	opts.Clock = e.clk
	e.bmc = fake.New(opts)
	cfg.Dialer = e.bmc
	if wrap != nil {
		cfg.Dialer = wrap(e.bmc)
	}
	if cfg.Locks == nil {
		cfg.Locks = syslock.NoLocking
	}
	cfg.Clock = e.clk
	s, err := job.NewStepper(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	e.stepper = s
	return e
}

// reconcile calls Step as a controller would: load the object, step,
// requeue after the returned delay (advancing the fake clock), until done.
func (e *stepEnv) reconcile(t *testing.T, j *job.Job, maxSteps int) (*job.Job, int) {
	t.Helper()
	require.NoError(t, e.crd.persist(context.Background(), j))
	for n := 1; n <= maxSteps; n++ {
		cur := e.crd.load(t)
		res, err := e.stepper.Step(context.Background(), cur, e.crd.persist)
		require.NoError(t, err)
		if res.Done {
			return e.crd.load(t), n
		}
		e.clk.Advance(res.RequeueAfter)
	}
	t.Fatalf("job not done after %d steps: %s", maxSteps, string(e.crd.stored))
	return nil, 0
}

// intentStored runs j's first step until its first write (the first task's
// intent) and stops it there, as a process that died right after: it returns
// the job as stored, the BMC untouched.
func (e *stepEnv) intentStored(t *testing.T, j *job.Job) *job.Job {
	t.Helper()
	stop := errors.New("died")
	_, err := e.stepper.Step(context.Background(), j, func(ctx context.Context, j *job.Job) error {
		require.NoError(t, e.crd.persist(ctx, j))
		return stop
	})
	require.ErrorIs(t, err, stop)
	require.Empty(t, e.bmc.Calls(), "nothing sent before the intent was stored")
	got := e.crd.load(t)
	require.Equal(t, task.PhaseStarted, got.Status.Tasks[0].Phase)
	return got
}

func newJob(tasks ...task.Spec) *job.Job {
	return &job.Job{Name: "j1", Generation: 1, CreatedAt: t0, Spec: job.Spec{BMC: "redfish://10.1.0.1/redfish/v1/Systems/1", Tasks: tasks}}
}

var (
	powerOff = task.Spec{Power: &task.PowerAction{Op: task.PowerOff}}
	powerOn  = task.Spec{Power: &task.PowerAction{Op: task.PowerOn}}
	pxeOnce  = task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}}
)

// A controller that reconciles a job many times uses one BMC session; polls
// while a power change lands come every PollInterval, and the change is seen
// within one interval of landing.
func TestStepControllerStyleOneSessionAndPollRate(t *testing.T) {
	const transition = 5 * time.Second
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, PowerTransition: transition}, job.StepperConfig{PollInterval: 250 * time.Millisecond})
	j, steps := e.reconcile(t, newJob(powerOff, pxeOnce, powerOn), 200)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Greater(t, steps, 20, "the job took many reconciles")
	s := e.bmc.Sessions()
	assert.Equal(t, 1, s.Logins, "one BMC session across %d steps", steps)
	assert.Equal(t, 0, s.Open, "closed once the job completed")

	// Power polls per transition: at most one per PollInterval, plus the
	// read-back right after the request.
	polls := len(e.bmc.CallsTo(fake.MethodPowerState))
	assert.LessOrEqual(t, polls, 2*(int(transition/(250*time.Millisecond))+2), "at most 4 polls/s over two transitions")
	// Detection lag: each power task completed at most one poll interval
	// after its request + transition.
	for _, i := range []int{0, 2} {
		ts := j.Status.Tasks[i]
		lag := ts.CompletionTime.Sub(ts.RequestTime.Add(transition))
		assert.GreaterOrEqual(t, lag, time.Duration(0), "task %d", i)
		assert.LessOrEqual(t, lag, 250*time.Millisecond, "task %d detected %s after landing", i, lag)
	}
}

func TestStepPersistsIntentBeforeEveryAction(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	var checked int
	check := func(ctx context.Context, c fake.Call) error {
		j := e.crd.load(t)
		i := j.Status.CurrentTask
		if j.Status.Tasks[i].Phase != task.PhaseStarted {
			return errors.New("action sent before its intent was persisted")
		}
		checked++
		return nil
	}
	e.bmc.SetHook(fake.MethodSetPower, check)
	e.bmc.SetHook(fake.MethodSetBootOverride, check)
	j, _ := e.reconcile(t, newJob(powerOff, pxeOnce, powerOn), 50)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 3, checked)
}

func TestStepPersistFailureStopsBeforeTheBMC(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j := newJob(powerOff)
	e.crd.failNext = errors.New("apiserver unavailable")
	_, err := e.stepper.Step(context.Background(), j, e.crd.persist)
	require.ErrorContains(t, err, "apiserver unavailable")
	assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower), "no action without persisted intent")
	assert.Equal(t, bmc.PowerOn, e.bmc.State().Power)
}

func TestStepTaskTimeout(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, PowerTransition: time.Hour}, job.StepperConfig{})
	off := powerOff
	off.Timeout = task.Duration{Duration: 10 * time.Second}
	j, _ := e.reconcile(t, newJob(off, powerOn), 500)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonTimedOut, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "task 1 (power off) failed: timed out after 10s")
	assert.Equal(t, "Skipped", j.Status.Tasks[1].Reason)
}

func TestStepJobTimeout(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, PowerTransition: time.Hour}, job.StepperConfig{})
	jb := newJob(powerOff, powerOn)
	jb.Spec.Timeout = task.Duration{Duration: 3 * time.Second}
	j, _ := e.reconcile(t, jb, 500)
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonTimedOut, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "job timed out after 3s")
}

// After a crash between intent and result, a task whose effect is already
// there completes without sending the action again.
func TestStepResumeRechecksBeforeResending(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{})
	// Simulate: intent persisted, action reached the BMC, then the process
	// died.
	j := e.intentStored(t, newJob(powerOff, powerOn))
	got, _ := e.reconcile(t, j, 50)
	assertCompleted(t, got, conditions.ResultSucceeded)
	for _, c := range e.bmc.CallsTo(fake.MethodSetPower) {
		assert.NotEqual(t, bmc.PowerActionOff, c.Args[0], "power off re-sent although the server was off")
	}
	assert.Equal(t, "effect already present", got.Status.Tasks[0].Message)
}

// dropFirst wraps a driver and accepts its first SetPower without passing it
// on, like a BMC that answers 204 and silently drops the request.
type dropFirst struct {
	bmc.Driver
	once    sync.Once
	dropped bool
}

func (d *dropFirst) SetPower(ctx context.Context, a bmc.PowerAction) error {
	drop := false
	d.once.Do(func() { drop = true; d.dropped = true })
	if drop {
		return nil
	}
	return d.Driver.SetPower(ctx, a)
}

// A dropped power request is sent again once ResendAfter passes while the
// BMC shows no transition.
func TestStepResendsDroppedPowerRequest(t *testing.T) {
	clk := clock.NewFake(t0)
	b := fake.New(fake.Options{Power: bmc.PowerOn, Clock: clk})
	drv := &dropFirst{}
	dialer := bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, c bmc.Credentials) (bmc.Driver, error) {
		d, err := b.Dial(ctx, ep, c)
		drv.Driver = d
		return drv, err
	})
	s, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: dialer, Clock: clk, ResendAfter: 5 * time.Second})
	require.NoError(t, err)
	e := &stepEnv{clk: clk, bmc: b, stepper: s, crd: &crd{}}
	j, _ := e.reconcile(t, newJob(powerOff), 100)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.True(t, drv.dropped)
	assert.Equal(t, 2, j.Status.Tasks[0].Attempts, "sent twice")
	assert.Len(t, b.CallsTo(fake.MethodSetPower), 1, "the BMC saw only the re-sent request")
	assert.Equal(t, bmc.PowerOff, b.State().Power)
}

func TestStepCancelRequested(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, PowerTransition: time.Minute}, job.StepperConfig{})
	j := newJob(powerOff, powerOn)
	require.NoError(t, e.crd.persist(context.Background(), j))
	for i := 0; i < 3; i++ {
		cur := e.crd.load(t)
		_, err := e.stepper.Step(context.Background(), cur, e.crd.persist)
		require.NoError(t, err)
	}
	cur := e.crd.load(t)
	require.False(t, cur.Completed())
	cur.CancelRequested = true
	res, err := e.stepper.Step(context.Background(), cur, e.crd.persist)
	require.NoError(t, err)
	require.True(t, res.Done)
	got := e.crd.load(t)
	assertCompleted(t, got, conditions.ResultCanceled)
	assert.Equal(t, conditions.ResultCanceled, got.Status.Tasks[0].Result)
	assert.Contains(t, got.Status.Tasks[0].Message, "interrupted")
	assert.Contains(t, got.Status.Tasks[1].Message, "not run")
}

func TestStepInvalidSpecFailsWithoutTouchingTheBMC(t *testing.T) {
	e := newStepEnv(t, fake.Options{}, job.StepperConfig{})
	j := newJob(task.Spec{Power: &task.PowerAction{Op: "sideways"}})
	got, _ := e.reconcile(t, j, 5)
	assertCompleted(t, got, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonInvalidSpec, got.Status.Reason)
	assert.Contains(t, got.Status.Message, `tasks[0].power.op: "sideways"`)
	assert.Empty(t, e.bmc.Calls())
}

// A spec change (new generation) restarts the job from its first task.
func TestStepNewGenerationRestarts(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(powerOff), 20)
	assertCompleted(t, j, conditions.ResultSucceeded)
	j.Generation = 2
	j.Spec.Tasks = []task.Spec{powerOn}
	j.Status.Conditions = nil // a host resets status when it edits the spec
	got, _ := e.reconcile(t, j, 20)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.EqualValues(t, 2, got.Status.ObservedGeneration)
	assert.Equal(t, bmc.PowerOn, e.bmc.State().Power)
}

type bootStub struct {
	mu      sync.Mutex
	started map[string]time.Duration
	done    bool
	result  conditions.Result
}

func (b *bootStub) StartBoot(_ context.Context, uuid, attempt string, timeout time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started == nil {
		b.started = map[string]time.Duration{}
	}
	b.started[uuid+"/"+attempt] = timeout
	return nil
}

func (b *bootStub) BootResult(_ context.Context, uuid, attempt string) (bool, conditions.Result, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.started[uuid+"/"+attempt]; !ok {
		return false, "", "", errors.New("unknown attempt")
	}
	return b.done, b.result, "signals: BootStateReceived", nil
}

func TestStepWaitForBoot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result conditions.Result
		want   conditions.Result
	}{{"booted", conditions.ResultSucceeded, conditions.ResultSucceeded}, {"timed out", conditions.ResultTimedOut, conditions.ResultFailed}} {
		t.Run(tc.name, func(t *testing.T) {
			boot := &bootStub{}
			e := newStepEnv(t, fake.Options{}, job.StepperConfig{Boot: boot})
			j := newJob(powerOn, task.Spec{WaitForBoot: &task.WaitForBootAction{}, Timeout: task.Duration{Duration: time.Minute}})
			j.Spec.SystemUUID = "4C4C4544-0042-4210-8044-B2C04F333132"
			require.NoError(t, e.crd.persist(context.Background(), j))
			var res job.StepResult
			for i := 0; i < 6; i++ {
				cur := e.crd.load(t)
				var err error
				res, err = e.stepper.Step(context.Background(), cur, e.crd.persist)
				require.NoError(t, err)
				e.clk.Advance(res.RequeueAfter)
			}
			require.False(t, res.Done, "waits while the tracker has no result")
			boot.mu.Lock()
			assert.Equal(t, time.Minute, boot.started[j.Spec.SystemUUID+"/"+job.BootAttemptID(j, 1)], "attempt registered at job start with the task timeout")
			boot.done, boot.result = true, tc.result
			boot.mu.Unlock()
			got, _ := e.reconcile(t, e.crd.load(t), 5)
			assertCompleted(t, got, tc.want)
			if tc.want == conditions.ResultFailed {
				assert.Equal(t, conditions.ReasonTimedOut, got.Status.Reason)
				assert.Contains(t, got.Status.Message, "task 2 (wait for boot) failed: boot TimedOut")
			}
		})
	}
}

// A cycle whose first request failed transiently is sent again: the server
// being On proves nothing about a cycle, so there is no "already present".
func TestStepCycleRetriedAfterTransientErrorReallyCycles(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn, PowerTransition: 5 * time.Second}, job.StepperConfig{})
	e.bmc.FailNext(fake.MethodSetPower, 1, bmc.Transient(errors.New("503 Service Unavailable")))
	j, _ := e.reconcile(t, newJob(task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}}), 100)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 1, e.bmc.State().Boots, "the server went through one power cycle")
	assert.Equal(t, 2, j.Status.Tasks[0].Attempts)
}

// After a crash between intent and answer, a cycle is sent again rather than
// taken as done because the server is On.
func TestStepResumedCycleIsResent(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j := e.intentStored(t, newJob(task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}})) // died after persisting the intent
	got, _ := e.reconcile(t, j, 20)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.Len(t, e.bmc.CallsTo(fake.MethodSetPower), 1)
	assert.Equal(t, 2, got.Status.Tasks[0].Attempts)
}

// Two wait-for-boot tasks in one job wait for two different boots: a
// callback for the first boot does not complete the second wait.
func TestStepEachWaitForBootHasItsOwnAttempt(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOff}, job.StepperConfig{})
	tr, err := bootstate.NewTracker(bootstate.Config{Store: memstore.New(), Clock: e.clk, InsecureSkipAuth: true})
	require.NoError(t, err)
	e.stepper, err = job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking, Dialer: e.bmc, Clock: e.clk, Boot: tr})
	require.NoError(t, err)
	const uuid = "4c4c4544-0042-4a10-8031-b2c04f4e4a31"
	wfb := task.Spec{WaitForBoot: &task.WaitForBootAction{}}
	jb := newJob(pxeOnce, powerOn, wfb, powerOff, powerOn, wfb)
	jb.Spec.SystemUUID = uuid
	require.NoError(t, e.crd.persist(context.Background(), jb))
	signals := 0
	step := func() job.StepResult {
		cur := e.crd.load(t)
		res, err := e.stepper.Step(context.Background(), cur, e.crd.persist)
		require.NoError(t, err)
		e.clk.Advance(res.RequeueAfter)
		return res
	}
	for n := 0; n < 200 && e.crd.load(t).Status.CurrentTask < 3; n++ {
		// (The step that completes the first wait goes on to the power
		// tasks after it, up to the second wait.)
		if e.crd.load(t).Status.CurrentTask == 2 && signals == 0 {
			_, err := tr.RecordSignal(context.Background(), uuid, "", bootstate.SignalBootStateReceived, "first boot")
			require.NoError(t, err)
			signals++
		}
		step()
	}
	require.GreaterOrEqual(t, e.crd.load(t).Status.CurrentTask, 3, "first wait completed on the first boot")
	for n := 0; n < 50; n++ {
		require.False(t, step().Done)
	}
	j := e.crd.load(t)
	require.Equal(t, 5, j.Status.CurrentTask, "the second wait does not pass on the first boot's signal")
	_, err = tr.RecordSignal(context.Background(), uuid, "", bootstate.SignalBootStateReceived, "second boot")
	require.NoError(t, err)
	got, _ := e.reconcile(t, e.crd.load(t), 20)
	assertCompleted(t, got, conditions.ResultSucceeded)
	assert.Equal(t, 2, e.bmc.State().Boots)
}

func TestStepTransientCredentialsErrorIsRetried(t *testing.T) {
	calls := 0
	var mu sync.Mutex
	res := bmc.CredentialsFunc(func(ctx context.Context, ref string) (bmc.Credentials, error) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 1 {
			return bmc.Credentials{}, bmc.Transient(errors.New("apiserver timeout"))
		}
		return bmc.Credentials{Username: "u", Password: "p"}, nil
	})
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{Credentials: res})
	j := newJob(powerOff)
	j.Spec.CredentialsRef = "lab"
	got, _ := e.reconcile(t, j, 50)
	assertCompleted(t, got, conditions.ResultSucceeded)
}
