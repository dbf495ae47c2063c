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
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

func netboot(url string) job.Spec {
	return job.Spec{
		BMC:            url,
		CredentialsRef: "lab",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		},
	}
}

// feedStore wraps a Store for a test that overrides some of its methods,
// passing the change feed through: embedding storage.Store alone hides
// Changes, and without it the Runner's Follower falls back to listing every
// job on each scan.
type feedStore struct{ storage.Store }

func (s feedStore) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	return s.Store.(storage.ChangeFeed).Changes(ctx, prefix, since, limit)
}

var labCreds = bmc.StaticCredentials{"lab": {Username: "admin", Password: "s3cret-pw"}}

type env struct {
	fleet  *fake.Fleet
	store  *memstore.Store
	runner *job.Runner
	cancel context.CancelFunc
	done   chan error
}

func newEnv(t *testing.T, cfg job.Config) *env {
	t.Helper()
	e := &env{fleet: fake.NewFleet(), store: memstore.New()}
	if cfg.Store == nil {
		cfg.Store = e.store
	}
	if cfg.Dialer == nil {
		cfg.Dialer = e.fleet
	}
	if cfg.Credentials == nil {
		cfg.Credentials = labCreds
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 2 * time.Millisecond
	}
	if cfg.ScanInterval == 0 {
		cfg.ScanInterval = 20 * time.Millisecond
	}
	if cfg.Retry.Initial == 0 {
		cfg.Retry.Initial = time.Millisecond
		cfg.Retry.Max = 5 * time.Millisecond
	}
	r, err := job.NewRunner(cfg)
	require.NoError(t, err)
	e.runner = r
	return e
}

func (e *env) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done = make(chan error, 1)
	go func() { e.done <- e.runner.Start(ctx) }()
	t.Cleanup(e.stop)
}

func (e *env) stop() {
	if e.cancel != nil {
		e.cancel()
		<-e.done
		e.cancel = nil
	}
}

func (e *env) addBMC(t *testing.T, url string, opts fake.Options) *fake.BMC {
	t.Helper()
	if opts.Username == "" {
		opts.Username, opts.Password = "admin", "s3cret-pw"
	}
	b, err := e.fleet.AddNew(url, opts)
	require.NoError(t, err)
	return b
}

func wait(t *testing.T, r *job.Runner, name string) *job.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j, err := r.Wait(ctx, name)
	require.NoError(t, err, "waiting for job %s", name)
	return j
}

// assertCompleted checks the condition model's invariants on a finished job.
func assertCompleted(t *testing.T, j *job.Job, want conditions.Result) {
	t.Helper()
	jobtest.AssertCompleted(t, j, want)
}

func TestRunnerNetbootFleet(t *testing.T) {
	e := newEnv(t, job.Config{Workers: 4})
	const n = 6
	for i := 0; i < n; i++ {
		e.addBMC(t, fmt.Sprintf("redfish://10.0.0.%d/redfish/v1/Systems/1", i+1), fake.Options{Power: bmc.PowerOn})
	}
	e.start(t)
	ctx := context.Background()
	for i := 0; i < n; i++ {
		_, err := e.runner.Submit(ctx, fmt.Sprintf("netboot-%d", i), netboot(fmt.Sprintf("redfish://10.0.0.%d/redfish/v1/Systems/1", i+1)))
		require.NoError(t, err)
	}
	for i := 0; i < n; i++ {
		j := wait(t, e.runner, fmt.Sprintf("netboot-%d", i))
		assertCompleted(t, j, conditions.ResultSucceeded)
		for k, ts := range j.Status.Tasks {
			assert.Equal(t, conditions.ResultSucceeded, ts.Result, "task %d", k)
			assert.Equal(t, 1, ts.Attempts, "task %d", k)
		}
		require.NotNil(t, j.Status.Wire)
		assert.EqualValues(t, 1, j.Status.Wire.Logins)
		b := e.fleet.Get(fmt.Sprintf("redfish://10.0.0.%d/redfish/v1/Systems/1", i+1))
		st := b.State()
		assert.Equal(t, bmc.PowerOn, st.Power)
		s := b.Sessions()
		assert.Equal(t, 1, s.Logins, "one connection per job")
		assert.Equal(t, 0, s.Open, "connection closed at the end of the job")
		assert.Len(t, b.CallsTo(fake.MethodSetBootOverride), 1)
	}
}

func TestRunnerOneJobPerBMC(t *testing.T) {
	e := newEnv(t, job.Config{Workers: 8})
	url := "ipmi://10.0.1.1"
	b := e.addBMC(t, url, fake.Options{Latency: time.Millisecond})
	e.start(t)
	for i := 0; i < 5; i++ {
		_, err := e.runner.Submit(context.Background(), fmt.Sprintf("j%d", i), netboot(url))
		require.NoError(t, err)
	}
	for i := 0; i < 5; i++ {
		assertCompleted(t, wait(t, e.runner, fmt.Sprintf("j%d", i)), conditions.ResultSucceeded)
	}
	s := b.Sessions()
	assert.Equal(t, 1, s.MaxOpen, "never two jobs (sessions) on one BMC at once")
	assert.Equal(t, 5, s.Logins)
}

func TestRunnerPermanentFailureNamesTaskAndError(t *testing.T) {
	e := newEnv(t, job.Config{})
	url := "redfish+http://10.0.2.1/redfish/v1/Systems/1"
	b := e.addBMC(t, url, fake.Options{})
	b.SetHook(fake.MethodSetPower, func(ctx context.Context, c fake.Call) error {
		if c.Args[0] == bmc.PowerActionOn {
			return errors.New("PowerOn refused: chassis intrusion")
		}
		return nil
	})
	e.start(t)
	_, err := e.runner.Submit(context.Background(), "fails", netboot(url))
	require.NoError(t, err)
	j := wait(t, e.runner, "fails")
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Contains(t, j.Status.Message, "task 3 (power on)")
	assert.Contains(t, j.Status.Message, "chassis intrusion")
	assert.Equal(t, conditions.ReasonBMCError, j.Status.Reason)
	assert.Equal(t, conditions.ResultSucceeded, j.Status.Tasks[0].Result)
	assert.Equal(t, conditions.ResultFailed, j.Status.Tasks[2].Result)
	assert.Len(t, b.CallsTo(fake.MethodSetPower), 2, "a permanent error is not retried")
}

func TestRunnerSkipsTasksAfterFailure(t *testing.T) {
	e := newEnv(t, job.Config{})
	url := "redfish://10.0.2.9"
	e.addBMC(t, url, fake.Options{Unsupported: []fake.Capability{bmc.CapabilityBootOverride}})
	e.start(t)
	_, err := e.runner.Submit(context.Background(), "nob", netboot(url))
	require.NoError(t, err)
	j := wait(t, e.runner, "nob")
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonNotSupported, j.Status.Reason)
	assert.Equal(t, conditions.ResultCanceled, j.Status.Tasks[2].Result)
	assert.Equal(t, "Skipped", j.Status.Tasks[2].Reason)
}

func TestRunnerRetriesTransientErrors(t *testing.T) {
	e := newEnv(t, job.Config{})
	url := "redfish://10.0.3.1"
	b := e.addBMC(t, url, fake.Options{Power: bmc.PowerOn})
	b.FailNext(fake.MethodSetPower, 2, bmc.Transient(errors.New("503 Service Unavailable")))
	e.start(t)
	_, err := e.runner.Submit(context.Background(), "retry", netboot(url))
	require.NoError(t, err)
	j := wait(t, e.runner, "retry")
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 3, j.Status.Tasks[0].Attempts)
	assert.Empty(t, j.Status.Tasks[0].LastError, "cleared on success")
}

func TestRunnerWrongCredentialsFailsAtOnceWithoutSecret(t *testing.T) {
	e := newEnv(t, job.Config{StepperConfig: job.StepperConfig{Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "wrong-horse-battery"}}}})
	url := "redfish://10.0.4.1"
	b := e.addBMC(t, url, fake.Options{})
	e.start(t)
	_, err := e.runner.Submit(context.Background(), "badcreds", netboot(url))
	require.NoError(t, err)
	j := wait(t, e.runner, "badcreds")
	assertCompleted(t, j, conditions.ResultFailed)
	assert.Equal(t, conditions.ReasonUnauthorized, j.Status.Reason)
	assert.Contains(t, j.Status.Message, "10.0.4.1")
	assert.Equal(t, 1, len(b.CallsTo(fake.MethodDial)), "unauthorized is not retried")
	recs, err := e.store.List(context.Background(), "")
	require.NoError(t, err)
	for _, r := range recs {
		assert.NotContains(t, string(r.Value), "wrong-horse-battery")
		assert.NotContains(t, string(r.Value), "s3cret-pw")
	}
}

func TestSubmitRejectsInvalidSpecAndStoresNothing(t *testing.T) {
	e := newEnv(t, job.Config{})
	spec := netboot("redfish://10.0.5.1")
	spec.Tasks[2].Power.Op = "of"
	_, err := e.runner.Submit(context.Background(), "bad", spec)
	require.ErrorIs(t, err, job.ErrInvalidSpec)
	assert.Contains(t, err.Error(), `tasks[2].power.op: "of"`)
	_, err = e.runner.Submit(context.Background(), "bad name!", netboot("redfish://10.0.5.1"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid name")
	recs, err := e.store.List(context.Background(), "")
	require.NoError(t, err)
	assert.Empty(t, recs)
	_, err = e.runner.Submit(context.Background(), "ok", netboot("redfish://10.0.5.1"))
	require.NoError(t, err)
	_, err = e.runner.Submit(context.Background(), "ok", netboot("redfish://10.0.5.1"))
	require.ErrorIs(t, err, storage.ErrExists)
}

func TestRunnerCancel(t *testing.T) {
	e := newEnv(t, job.Config{})
	url := "redfish://10.0.6.1"
	b := e.addBMC(t, url, fake.Options{})
	entered := make(chan struct{})
	var once sync.Once
	b.SetHook(fake.MethodSetBootOverride, func(ctx context.Context, c fake.Call) error {
		once.Do(func() { close(entered) })
		return bmc.Transient(errors.New("busy"))
	})
	e.start(t)
	_, err := e.runner.Submit(context.Background(), "c", netboot(url))
	require.NoError(t, err)
	recv(t, entered)
	require.NoError(t, e.runner.Cancel(context.Background(), "c"))
	j := wait(t, e.runner, "c")
	assertCompleted(t, j, conditions.ResultCanceled)
	for _, c := range b.CallsTo(fake.MethodSetPower) {
		assert.NotEqual(t, bmc.PowerActionOn, c.Args[0], "power on after cancel")
	}
}

// A cancel that arrives while the job polls for a power change (steps that
// write nothing) is seen at the next step, not when the change lands.
func TestRunnerCancelWhilePolling(t *testing.T) {
	e := newEnv(t, job.Config{})
	url := "redfish://10.0.6.2"
	// The power-off never lands within the test.
	b := e.addBMC(t, url, fake.Options{Power: bmc.PowerOn, PowerTransition: time.Hour})
	polling := make(chan struct{}, 1)
	b.SetHook(fake.MethodPowerState, func(ctx context.Context, c fake.Call) error {
		select {
		case polling <- struct{}{}:
		default:
		}
		return nil
	})
	e.start(t)
	_, err := e.runner.Submit(context.Background(), "c", netboot(url))
	require.NoError(t, err)
	recv(t, polling)
	recv(t, polling) // a second read-back: the job is waiting between polls
	require.NoError(t, e.runner.Cancel(context.Background(), "c"))
	j := wait(t, e.runner, "c")
	assertCompleted(t, j, conditions.ResultCanceled)
	assert.Empty(t, b.CallsTo(fake.MethodSetBootOverride), "nothing after the cancel")
}

// A runner that dies mid-task (lock not released, task left in phase
// Started) is resumed by a new runner on the same store once the lease
// expires; finished tasks are not re-run.
func TestRunnerResumesAfterCrash(t *testing.T) {
	store := memstore.New()
	fleet := fake.NewFleet()
	url := "redfish://10.0.7.1/redfish/v1/Systems/1"
	b, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOn})
	require.NoError(t, err)
	blocked := make(chan struct{})
	var once sync.Once
	b.SetHook(fake.MethodSetPower, func(ctx context.Context, c fake.Call) error {
		if c.Args[0] == bmc.PowerActionOn {
			once.Do(func() { close(blocked) })
			<-ctx.Done() // the runner dies while the BMC call is in flight
			return ctx.Err()
		}
		return nil
	})
	cut := &outageStore{Store: store}
	cfg := job.Config{Store: cut, StepperConfig: job.StepperConfig{Dialer: fleet, Credentials: labCreds, PollInterval: time.Millisecond}, LeaseDuration: 200 * time.Millisecond, ScanInterval: 10 * time.Millisecond, Owner: "runner-1"}
	r1, err := job.NewRunner(cfg)
	require.NoError(t, err)
	ctx1, cancel1 := context.WithCancel(context.Background())
	done1 := make(chan error, 1)
	go func() { done1 <- r1.Start(ctx1) }()
	_, err = r1.Submit(context.Background(), "resume", netboot(url))
	require.NoError(t, err)
	recv(t, blocked)
	cut.down.Store(true) // the runner dies: nothing it does reaches the store any more
	cancel1()
	require.NoError(t, <-done1)

	rec, err := store.Get(context.Background(), "bmckit/jobs/resume")
	require.NoError(t, err)
	var j *job.Job
	require.NoError(t, json.Unmarshal(rec.Value, &j))
	require.False(t, j.Completed())
	assert.Equal(t, 2, j.Status.CurrentTask)
	assert.Equal(t, "Started", string(j.Status.Tasks[2].Phase), "intent was persisted before the action")
	locks, err := store.List(context.Background(), "bmckit/systems/")
	require.NoError(t, err)
	require.Len(t, locks, 1, "the crashed runner's lock is still there")

	b.SetHook(fake.MethodSetPower, nil)
	cfg.Store = store
	cfg.Owner = "runner-2"
	r2, err := job.NewRunner(cfg)
	require.NoError(t, err)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() { _ = r2.Start(ctx2) }()
	j = wait(t, r2, "resume")
	assertCompleted(t, j, conditions.ResultSucceeded)
	offs, boots := 0, len(b.CallsTo(fake.MethodSetBootOverride))
	for _, c := range b.CallsTo(fake.MethodSetPower) {
		if c.Args[0] == bmc.PowerActionOff {
			offs++
		}
	}
	assert.Equal(t, 1, offs, "power off (finished before the crash) not re-run")
	assert.Equal(t, 1, boots, "boot override (finished before the crash) not re-run")
	assert.Equal(t, bmc.PowerOn, b.State().Power)
	assert.Equal(t, 2, j.Status.Tasks[2].Attempts, "the interrupted task was re-checked and re-sent")
}

// A stopped runner releases its locks so another runner resumes at once.
func TestRunnerGracefulStopHandsOver(t *testing.T) {
	store := memstore.New()
	fleet := fake.NewFleet()
	url := "redfish://10.0.8.1"
	b, err := fleet.AddNew(url, fake.Options{})
	require.NoError(t, err)
	blocked := make(chan struct{})
	var once sync.Once
	b.SetHook(fake.MethodSetBootOverride, func(ctx context.Context, c fake.Call) error {
		once.Do(func() { close(blocked) })
		<-ctx.Done()
		return ctx.Err()
	})
	cfg := job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fleet, Credentials: labCreds, PollInterval: time.Millisecond}, LeaseDuration: time.Hour, ScanInterval: 10 * time.Millisecond}
	r1, err := job.NewRunner(cfg)
	require.NoError(t, err)
	ctx1, cancel1 := context.WithCancel(context.Background())
	done1 := make(chan error, 1)
	go func() { done1 <- r1.Start(ctx1) }()
	_, err = r1.Submit(context.Background(), "handover", netboot(url))
	require.NoError(t, err)
	recv(t, blocked)
	cancel1()
	require.NoError(t, <-done1)
	b.SetHook(fake.MethodSetBootOverride, nil)
	r2, err := job.NewRunner(cfg)
	require.NoError(t, err)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() { _ = r2.Start(ctx2) }()
	assertCompleted(t, wait(t, r2, "handover"), conditions.ResultSucceeded)
}

func TestRunnerStartTwice(t *testing.T) {
	e := newEnv(t, job.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, e.runner.Start(ctx), "a stopped context ends Start cleanly")
	err := e.runner.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already started")
}

func TestNewRunnerRequiresStoreAndDialer(t *testing.T) {
	_, err := job.NewRunner(job.Config{StepperConfig: job.StepperConfig{Dialer: fake.NewFleet()}})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "Store"))
	_, err = job.NewRunner(job.Config{Store: memstore.New()})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "Dialer"))
}

// recv waits for ch to be closed, failing the test after a deadline.
func recv(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for the BMC call")
	}
}

// A session that expires mid-job (and a driver that does not log in again by
// itself) costs one retry and a new login, not the job.
func TestRunnerRedialsAfterSessionExpired(t *testing.T) {
	e := newEnv(t, job.Config{})
	url := "redfish://10.0.9.1"
	b := e.addBMC(t, url, fake.Options{Power: bmc.PowerOn})
	var once sync.Once
	b.SetHook(fake.MethodSetBootOverride, func(ctx context.Context, c fake.Call) error {
		once.Do(b.ExpireSessions) // the session dies under the job
		return nil
	})
	e.start(t)
	_, err := e.runner.Submit(context.Background(), "expire", netboot(url))
	require.NoError(t, err)
	j := wait(t, e.runner, "expire")
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, 2, b.Sessions().Logins, "dialed again after the session expired")
	assert.Equal(t, 0, b.Sessions().Open)
}

// A job queued behind another on the same BMC completes as Canceled as soon
// as it is canceled, not after the job in front of it.
func TestRunnerCancelQueuedJob(t *testing.T) {
	e := newEnv(t, job.Config{Workers: 4})
	url := "redfish://10.0.8.9/redfish/v1/Systems/1"
	b := e.addBMC(t, url, fake.Options{Power: bmc.PowerOn})
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
	e.start(t)
	_, err := e.runner.Submit(context.Background(), "first", netboot(url))
	require.NoError(t, err)
	recv(t, entered)
	_, err = e.runner.Submit(context.Background(), "queued", netboot(url))
	require.NoError(t, err)
	require.NoError(t, e.runner.Cancel(context.Background(), "queued"))
	j := wait(t, e.runner, "queued") // while "first" is still blocked
	assertCompleted(t, j, conditions.ResultCanceled)
	assert.Contains(t, j.Status.Message, "before it started")
	first, err := e.runner.Get(context.Background(), "first")
	require.NoError(t, err)
	assert.False(t, first.Completed(), "the first job is still running")
	close(release)
	assertCompleted(t, wait(t, e.runner, "first"), conditions.ResultSucceeded)
	assert.Equal(t, 1, b.Sessions().Logins, "the canceled job never touched the BMC")
}
