package job_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu           sync.Mutex
	jobStarted   []observe.JobEvent
	jobFinished  []observe.JobEvent
	taskStarted  []observe.TaskEvent
	taskFinished []observe.TaskEvent
	errs         []observe.BMCErrorEvent
	wire         []observe.WireEvent
	queue        []observe.QueueEvent
	leases       []observe.LeaseEvent
	taskStart    chan struct{} // gets a value per TaskStarted, if not full
	leaseLost    chan struct{}
}

func newRecorder() *recorder {
	return &recorder{taskStart: make(chan struct{}, 100), leaseLost: make(chan struct{}, 10)}
}

func add[E any](mu *sync.Mutex, s *[]E) func(E) {
	return func(e E) { mu.Lock(); *s = append(*s, e); mu.Unlock() }
}

func (r *recorder) observer() observe.Observer {
	return observe.Observer{
		JobStarted:  add(&r.mu, &r.jobStarted),
		JobFinished: add(&r.mu, &r.jobFinished),
		TaskStarted: func(e observe.TaskEvent) {
			add(&r.mu, &r.taskStarted)(e)
			select {
			case r.taskStart <- struct{}{}:
			default:
			}
		},
		TaskFinished: add(&r.mu, &r.taskFinished),
		BMCError:     add(&r.mu, &r.errs),
		Wire:         add(&r.mu, &r.wire),
		Queue:        add(&r.mu, &r.queue),
		LeaseLost: func(e observe.LeaseEvent) {
			add(&r.mu, &r.leases)(e)
			r.leaseLost <- struct{}{}
		},
	}
}

func TestObserverJobsTasksErrorsWireQueue(t *testing.T) {
	rec := newRecorder()
	creds := bmc.StaticCredentials{"lab": {Username: "admin", Password: "s3cret-pw"}, "wrong": {Username: "admin", Password: "not-it-pw"}}
	e := newEnv(t, job.Config{StepperConfig: job.StepperConfig{Credentials: creds, Observer: rec.observer()}})
	// Two systems behind one endpoint share a session; a third BMC refuses
	// the login.
	const s1, s2, s3 = "redfish://10.0.0.1/redfish/v1/Systems/1", "redfish://10.0.0.1/redfish/v1/Systems/2", "redfish://10.0.0.3/redfish/v1/Systems/1"
	b1 := e.addBMC(t, s1, fake.Options{Power: bmc.PowerOn})
	b2 := e.addBMC(t, s2, fake.Options{Power: bmc.PowerOn})
	e.addBMC(t, s3, fake.Options{Power: bmc.PowerOn})
	ctx := context.Background()
	for name, spec := range map[string]job.Spec{"a": netboot(s1), "a2": netboot(s1), "b": netboot(s2)} {
		_, err := e.runner.Submit(ctx, name, spec)
		require.NoError(t, err)
	}
	bad := netboot(s3)
	bad.CredentialsRef = "wrong"
	_, err := e.runner.Submit(ctx, "bad", bad)
	require.NoError(t, err)
	e.start(t)
	jobs := map[string]*job.Job{}
	for _, n := range []string{"a", "a2", "b", "bad"} {
		jobs[n] = wait(t, e.runner, n)
	}
	e.stop() // every connection closed: its last traffic reported

	rec.mu.Lock()
	defer rec.mu.Unlock()
	started := map[string]int{}
	for _, ev := range rec.jobStarted {
		started[ev.Job]++
		assert.False(t, ev.Start.IsZero())
	}
	assert.Equal(t, map[string]int{"a": 1, "a2": 1, "b": 1, "bad": 1}, started, "one JobStarted per job")
	require.Len(t, rec.jobFinished, 4)
	for _, ev := range rec.jobFinished {
		j := jobs[ev.Job]
		assert.Equal(t, j.Status.Result, ev.Result, ev.Job)
		assert.Equal(t, j.Status.Reason, ev.Reason, ev.Job)
		assert.True(t, j.Status.CompletionTime.Equal(ev.End), ev.Job)
		assert.True(t, j.Status.StartTime.Equal(ev.Start), ev.Job)
		assert.Equal(t, ev.End.Round(0).Sub(ev.Start.Round(0)), ev.Duration().Round(0), ev.Job)
		assert.Equal(t, "redfish", ev.Driver)
		require.Len(t, ev.Tasks, 3, ev.Job)
		assert.Equal(t, []string{"power", "bootDevice", "power"}, []string{ev.Tasks[0].Kind, ev.Tasks[1].Kind, ev.Tasks[2].Kind})
		if ev.Job == "bad" {
			assert.Equal(t, conditions.ResultFailed, ev.Result)
			assert.Equal(t, conditions.ReasonUnauthorized, ev.Reason)
			assert.Equal(t, "10.0.0.3:443/redfish/v1/Systems/1", ev.System)
			assert.True(t, ev.Tasks[1].Start.IsZero(), "a task that never started has no start")
		} else {
			assert.Equal(t, conditions.ResultSucceeded, ev.Result, ev.Message)
		}
	}
	// Tasks: 3 per successful job; the failed job's first task started
	// and failed, the others never started.
	perJob := func(evs []observe.TaskEvent) map[string]int {
		m := map[string]int{}
		for _, ev := range evs {
			m[ev.Job]++
		}
		return m
	}
	assert.Equal(t, map[string]int{"a": 3, "a2": 3, "b": 3, "bad": 1}, perJob(rec.taskStarted))
	assert.Equal(t, map[string]int{"a": 3, "a2": 3, "b": 3, "bad": 1}, perJob(rec.taskFinished))
	for _, ev := range rec.taskFinished {
		j := jobs[ev.Job]
		ts := j.Status.Tasks[ev.Index]
		assert.Equal(t, ts.Result, ev.Result)
		assert.True(t, ts.StartTime.Equal(ev.Start))
		assert.True(t, ts.CompletionTime.Equal(ev.End))
		assert.GreaterOrEqual(t, ev.Duration(), time.Duration(0))
		assert.Equal(t, ts.Attempts, ev.Attempt)
		assert.Equal(t, j.Spec.Tasks[ev.Index].Action(), ev.Kind)
	}

	// One BMC error: the refused login.
	require.Len(t, rec.errs, 1)
	assert.Equal(t, observe.BMCErrorEvent{Job: "bad", System: "10.0.0.3:443/redfish/v1/Systems/1", Driver: "redfish", Task: 0, Login: true, Class: "unauthorized"}, rec.errs[0])

	// Wire: the deltas add up to what went to the BMCs behind 10.0.0.1,
	// each request counted once although two systems shared the session
	// (each job's Status.Wire holds the session's totals).
	var sum bmc.Stats
	for _, w := range rec.wire {
		assert.Equal(t, "redfish", w.Driver)
		if w.Endpoint == "10.0.0.1:443" {
			sum.Requests += w.Delta.Requests
			sum.Logins += w.Delta.Logins
		}
	}
	assert.Equal(t, int64(len(b1.Calls())+len(b2.Calls())), sum.Requests, "requests")
	assert.Equal(t, int64(e.fleet.Logins(s1)), sum.Logins, "logins")

	// Queue: four jobs known at first, two of them waiting at least (a and
	// a2 share a system); nothing left at the end.
	require.NotEmpty(t, rec.queue)
	maxJobs, maxWaiting := 0, 0
	for i, q := range rec.queue {
		maxJobs, maxWaiting = max(maxJobs, q.Jobs), max(maxWaiting, q.Waiting)
		assert.Equal(t, q.Jobs-q.Held, q.Waiting)
		if i > 0 {
			assert.NotEqual(t, rec.queue[i-1], q, "reported only on a change")
		}
	}
	assert.Equal(t, 4, maxJobs)
	assert.GreaterOrEqual(t, maxWaiting, 1)
	assert.Equal(t, observe.QueueEvent{}, rec.queue[len(rec.queue)-1])
	assert.Empty(t, rec.leases)
}

func TestObserverLeaseLost(t *testing.T) {
	rec := newRecorder()
	e := newEnv(t, job.Config{StepperConfig: job.StepperConfig{Observer: rec.observer()}, LeaseDuration: 3 * time.Second})
	const addr = "redfish://10.0.0.1/redfish/v1/Systems/1"
	// The power change never lands, so the job holds its system.
	e.addBMC(t, addr, fake.Options{Power: bmc.PowerOff, PowerTransition: time.Hour})
	ctx := context.Background()
	_, err := e.runner.Submit(ctx, "slow", job.Spec{BMC: addr, CredentialsRef: "lab", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
	require.NoError(t, err)
	e.start(t)
	select {
	case <-rec.taskStart:
	case <-time.After(20 * time.Second):
		t.Fatal("the job did not start")
	}
	// Another runner takes the lock over: overwrite it.
	locks, err := e.store.List(ctx, "bmckit/systems/")
	require.NoError(t, err)
	require.Len(t, locks, 1)
	_, err = e.store.Update(ctx, locks[0].Key, []byte(`{"holder":"slow","owner":"other-runner","leaseMillis":3000}`), locks[0].Revision)
	require.NoError(t, err)
	select {
	case <-rec.leaseLost:
	case <-time.After(20 * time.Second):
		t.Fatal("no LeaseLost event")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, []observe.LeaseEvent{{System: "10.0.0.1:443/redfish/v1/Systems/1", Job: "slow"}}, rec.leases)
}

func TestObserverStepperPathAndPanics(t *testing.T) {
	fleet := fake.NewFleet()
	const addr = "redfish://10.0.0.9/redfish/v1/Systems/1"
	_, err := fleet.AddNew(addr, fake.Options{Power: bmc.PowerOn})
	require.NoError(t, err)
	var finished, started []observe.JobEvent
	var mu sync.Mutex
	st, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking,
		Dialer: fleet, PollInterval: time.Millisecond,
		Observer: observe.Join(
			observe.Observer{TaskStarted: func(observe.TaskEvent) { panic("observer bug") }},
			observe.Observer{
				JobStarted:  func(e observe.JobEvent) { mu.Lock(); started = append(started, e); mu.Unlock() },
				JobFinished: func(e observe.JobEvent) { mu.Lock(); finished = append(finished, e); mu.Unlock() },
			},
		),
	})
	require.NoError(t, err)
	defer st.Close(context.Background())
	j := &job.Job{Name: "ctl", Generation: 1, CreatedAt: time.Now(), Spec: job.Spec{BMC: addr, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}}}}
	// A write that fails reports nothing.
	_, err = st.Step(context.Background(), &job.Job{Name: j.Name, Generation: 1, CreatedAt: j.CreatedAt, Spec: j.Spec}, func(context.Context, *job.Job) error { return errors.New("conflict") })
	require.Error(t, err)
	mu.Lock()
	assert.Empty(t, started, "nothing was stored")
	mu.Unlock()
	writes := 0
	persist := func(context.Context, *job.Job) error { writes++; return nil }
	deadline := time.Now().Add(20 * time.Second)
	for !j.Completed() {
		require.True(t, time.Now().Before(deadline), "job did not complete")
		res, err := st.Step(context.Background(), j, persist)
		require.NoError(t, err, "a panicking observer must not fail the step")
		_ = res // a controller would requeue after res.RequeueAfter
	}
	assert.Equal(t, conditions.ResultSucceeded, j.Status.Result, j.Status.Message)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, started, 1)
	require.Len(t, finished, 1)
	assert.Equal(t, "ctl", finished[0].Job)
	assert.Positive(t, writes)
}

func TestObserverEventsHoldNoSecrets(t *testing.T) {
	rec := newRecorder()
	e := newEnv(t, job.Config{StepperConfig: job.StepperConfig{Observer: rec.observer()}})
	const addr = "ipmi://10.0.0.7"
	e.addBMC(t, addr, fake.Options{Power: bmc.PowerOn})
	_, err := e.runner.Submit(context.Background(), "x", netboot(addr))
	require.NoError(t, err)
	e.start(t)
	wait(t, e.runner, "x")
	e.stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	all := strings.Join([]string{
		fmtAll(rec.jobStarted), fmtAll(rec.jobFinished), fmtAll(rec.taskStarted), fmtAll(rec.taskFinished), fmtAll(rec.wire),
	}, "\n")
	assert.NotContains(t, all, "s3cret-pw")
	assert.Contains(t, all, "ipmi")
}

func fmtAll[E any](evs []E) string { return fmt.Sprintf("%+v", evs) }

// BenchmarkStepObserved is BenchmarkStep with an observer set for every
// event (each an atomic add): the observer's own cost per job.
func BenchmarkStepObserved(b *testing.B) {
	var n atomic.Int64
	job.BenchSteps(b, job.StepperConfig{Observer: observe.Observer{
		JobStarted: func(observe.JobEvent) { n.Add(1) }, JobFinished: func(observe.JobEvent) { n.Add(1) },
		TaskStarted: func(observe.TaskEvent) { n.Add(1) }, TaskFinished: func(observe.TaskEvent) { n.Add(1) },
		BMCError: func(observe.BMCErrorEvent) { n.Add(1) }, Wire: func(observe.WireEvent) { n.Add(1) },
	}}, false)
	if n.Load() == 0 {
		b.Fatal("no events")
	}
}
