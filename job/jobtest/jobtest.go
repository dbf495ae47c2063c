// Package jobtest is the job test kit: it runs a Spec through a real
// job.Runner on a fresh memstore and returns the finished Job, as rivertest
// does for river. Use it in your own tests with the fake driver (bmc/fake),
// a simulator (redfishtest, ipmitest) or your own Driver:
//
//	j := jobtest.Run(t, job.Config{Dialer: fleet}, creds, jobtest.Netboot(addr, "", 0), 10*time.Second)
//	if j.Status.Result != conditions.ResultSucceeded { ... }
//
// bmckit's own driver packages use it for their end-to-end tests, so each
// states only what differs: its dialer and what it checks afterwards.
package jobtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// Netboot is the netboot job the driver tests run: power off, one-time PXE
// boot in mode (empty: leave the mode), power on, each with taskTimeout
// (zero: the runner's default). Credentials are referenced as "lab".
func Netboot(addr string, mode task.BootMode, taskTimeout time.Duration) job.Spec {
	d := task.Duration{Duration: taskTimeout}
	return job.Spec{
		BMC:            addr,
		CredentialsRef: "lab",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}, Timeout: d},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: mode}, Timeout: d},
			{Power: &task.PowerAction{Op: task.PowerOn}, Timeout: d},
		},
	}
}

// Run runs spec as the only job of a job.Runner configured by cfg on a fresh
// memstore, with creds resolved for the reference "lab", and returns the job
// once it completed and the runner stopped (so its BMC session is closed).
// It fails the test if the job does not complete within wait, or if any
// stored record holds the password.
func Run(t testing.TB, cfg job.Config, creds bmc.Credentials, spec job.Spec, wait time.Duration) *job.Job {
	t.Helper()
	store := memstore.New()
	cfg.Store = store
	cfg.Credentials = job.StaticCredentials{"lab": creds}
	r, err := job.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()
	if _, err := r.Submit(ctx, "netboot", spec); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, wait)
	defer wcancel()
	j, err := r.Wait(wctx, "netboot")
	if err != nil {
		t.Fatalf("waiting for the job: %v", err)
	}
	stop()
	recs, err := store.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if creds.Password != "" && strings.Contains(string(rec.Value), creds.Password) {
			t.Fatalf("stored record %s holds the password", rec.Key)
		}
	}
	return j
}

// AssertCompleted fails t unless j completed with the result want and its
// status keeps the condition model's invariants: Completed=True, no stale
// Running=True on the job or any task, no condition other than Completed and
// Running (the result is Status.Result, not a condition), a completion time,
// and every task completed. It is what bmckit's own tests check on every
// finished job.
func AssertCompleted(t testing.TB, j *job.Job, want conditions.Result) {
	t.Helper()
	if !conditions.IsTrue(j.Status.Conditions, conditions.TypeCompleted) {
		t.Fatalf("Completed must be True: %+v", j.Status)
	}
	if j.Status.Result != want {
		t.Errorf("result %q, want %q; reason %s, message: %s", j.Status.Result, want, j.Status.Reason, j.Status.Message)
	}
	if !conditions.IsFalse(j.Status.Conditions, conditions.TypeRunning) {
		t.Errorf("a finished job must have Running=False: %+v", j.Status.Conditions)
	}
	for _, c := range j.Status.Conditions {
		if c.Type != conditions.TypeCompleted && c.Type != conditions.TypeRunning {
			t.Errorf("condition %q mirrors the result; only Completed and Running are set", c.Type)
		}
	}
	if j.Status.CompletionTime == nil {
		t.Errorf("a finished job must have a completion time")
	}
	for i, ts := range j.Status.Tasks {
		if !ts.Completed() {
			t.Errorf("task %d not completed: %+v", i, ts)
		}
		if conditions.IsTrue(ts.Conditions, conditions.TypeRunning) {
			t.Errorf("task %d still Running=True", i)
		}
	}
}

// Wait waits up to timeout for the job name on r to complete and returns it;
// it fails t if the job does not complete in time.
func Wait(t testing.TB, r *job.Runner, name string, timeout time.Duration) *job.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	j, err := r.Wait(ctx, name)
	if err != nil {
		t.Fatalf("waiting for job %s: %v", name, err)
	}
	return j
}

// Interleavings counts how often a job acts on a system again after another
// job acted on it in between. calls lists, in order, the job name of every
// state-changing call one system received (job.CallFromContext gives a
// driver or a fake.BMC hook the name). One job per system means 0.
func Interleavings(calls []string) int {
	finished := map[string]bool{}
	n, prev := 0, ""
	for _, c := range calls {
		if c != prev && prev != "" {
			finished[prev] = true
		}
		if finished[c] {
			n++
			delete(finished, c)
		}
		prev = c
	}
	return n
}
