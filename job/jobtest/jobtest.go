// Package jobtest is the job test kit: it runs a Spec through a real
// job.Runner on a fresh memstore and returns the finished Job, as rivertest
// does for river. Use it in your own tests with the fake driver (bmc/fake),
// a simulator (redfishtest, ipmitest) or your own Driver:
//
//	cfg := job.Config{StepperConfig: job.StepperConfig{Dialer: fleet}}
//	j := jobtest.Run(t, cfg, creds, jobtest.Netboot(addr, "", 0), 10*time.Second)
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
	cfg.Store = memstore.New()
	cfg.Credentials = bmc.StaticCredentials{"lab": creds}
	return RunAll(t, cfg, map[string]job.Spec{"netboot": spec}, wait)["netboot"]
}

// RunAll submits every spec (by its job name) to a job.Runner configured by
// cfg (a fresh memstore unless cfg.Store is set), waits up to wait for each
// job to complete, stops the runner (so BMC sessions are closed and their
// traffic reported to observers) and returns the completed jobs. It fails
// the test if a job does not complete in time, if the runner does not stop
// cleanly, or, when cfg.Credentials is a bmc.StaticCredentials, if any
// stored record holds one of its passwords.
func RunAll(t testing.TB, cfg job.Config, specs map[string]job.Spec, wait time.Duration) map[string]*job.Job {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	r, err := job.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	defer func() { _ = stop() }()
	for name, spec := range specs {
		if _, err := r.Submit(ctx, name, spec); err != nil {
			t.Fatalf("submitting %s: %v", name, err)
		}
	}
	jobs := make(map[string]*job.Job, len(specs))
	for name := range specs {
		jobs[name] = Wait(t, r, name, wait)
	}
	if err := stop(); err != nil {
		t.Fatalf("stopping the runner: %v", err)
	}
	recs, err := cfg.Store.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if creds, ok := cfg.Credentials.(bmc.StaticCredentials); ok {
		for _, rec := range recs {
			for _, c := range creds {
				if HoldsSecret(string(rec.Value), c.Password) {
					t.Fatalf("stored record %s holds a password", rec.Key)
				}
			}
		}
	}
	return jobs
}

// HoldsSecret reports whether text holds secret. A secret of 8 bytes or
// more counts anywhere in text; a shorter one only where it stands alone
// (no letter or digit on either side), so a password "p" is not found in
// "pxe" while a leaked "pw=p" or `"p"` still is. An empty secret is never
// found.
func HoldsSecret(text, secret string) bool {
	if secret == "" {
		return false
	}
	if len(secret) >= 8 {
		return strings.Contains(text, secret)
	}
	word := func(b byte) bool {
		return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
	}
	for i := 0; ; {
		k := strings.Index(text[i:], secret)
		if k < 0 {
			return false
		}
		at := i + k
		end := at + len(secret)
		if (at == 0 || !word(text[at-1])) && (end == len(text) || !word(text[end])) {
			return true
		}
		i = at + 1
	}
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
