package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// jobName is the name of bmcjob's one job in its memory store.
const jobName = "bmcjob"

// runJob runs spec with a Runner on a memory store and returns the
// completed job. Progress goes to e.stderr: a line whenever a task moves
// on, and every tf.progress while the job waits, saying which task waits
// for what. The wait ends at tf.timeout or when ctx ends (Ctrl-C) with an
// error that says the same. The job's own failure is not an error here: the
// caller reads j.Status.
func runJob(ctx context.Context, e *env, c *conn, spec job.Spec, tf *targetFlags) (job.Job, error) {
	if c.missing != nil {
		return job.Job{}, c.missing
	}
	if tf.timeout <= 0 {
		return job.Job{}, fmt.Errorf("-timeout %s: want a positive duration, e.g. 10m", tf.timeout)
	}
	if tf.progress < 0 {
		return job.Job{}, fmt.Errorf("-progress %s: want a positive duration, e.g. 3s, or 0 for no progress lines while waiting", tf.progress)
	}
	p := &progress{e: e, last: map[int]string{}}
	runner, err := job.NewRunner(job.Config{
		Store: memstore.New(),
		StepperConfig: job.StepperConfig{
			Dialer:      c.dialer,
			Credentials: c.resolver,
			Boot:        c.boot,
		},

		OnUpdate: p.update,
	})
	if err != nil {
		return job.Job{}, err
	}
	spec.CredentialsRef = c.ref
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runner.Start(runCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	if _, err := runner.Submit(ctx, jobName, spec); err != nil {
		return job.Job{}, err
	}

	type waited struct {
		j   *job.Job
		err error
	}
	waitc := make(chan waited, 1)
	go func() {
		j, err := runner.Wait(runCtx, jobName)
		waitc <- waited{j, err}
	}()
	// current reads the job for a message: the ctx may be over (Ctrl-C),
	// the memory store answers regardless.
	current := func() *job.Job {
		j, err := runner.Get(context.WithoutCancel(ctx), jobName)
		if err != nil {
			return nil
		}
		return j
	}
	start := e.now()
	deadline := e.after(tf.timeout)
	var tick <-chan time.Time
	if tf.progress > 0 {
		tick = e.after(tf.progress)
	}
	for {
		select {
		case w := <-waitc:
			if w.err != nil {
				if ctx.Err() != nil {
					return job.Job{}, fmt.Errorf("interrupted after %s: %s", e.now().Sub(start).Round(time.Second), waitingFor(current(), e.now(), "was waiting"))
				}
				return job.Job{}, fmt.Errorf("waiting for the job: %w", w.err)
			}
			return *w.j, nil
		case <-tick:
			p.waiting(e.now().Sub(start), current())
			tick = e.after(tf.progress)
		case <-deadline:
			return job.Job{}, fmt.Errorf("gave up after %s (-timeout): %s", tf.timeout, waitingFor(current(), e.now(), "was waiting"))
		case <-ctx.Done():
			return job.Job{}, fmt.Errorf("interrupted after %s: %s", e.now().Sub(start).Round(time.Second), waitingFor(current(), e.now(), "was waiting"))
		}
	}
}

// progress prints the progress lines of one job on e.stderr; the runner's
// OnUpdate and the waiting loop both print.
type progress struct {
	e  *env
	mu sync.Mutex
	// last is each task's last printed line: an update prints every task
	// whose line changed, so a task that finished within one step still
	// gets its "done" (or "failed") line.
	last map[int]string
}

func (p *progress) update(j job.Job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ts := range j.Status.Tasks {
		if i >= len(j.Spec.Tasks) || (ts.Phase == task.PhasePending && i != j.Status.CurrentTask) {
			continue
		}
		line := fmt.Sprintf("task %d/%d %s: %s", i+1, len(j.Spec.Tasks), j.Spec.Tasks[i].Describe(), phaseName(ts))
		if ts.LastError != "" && ts.Phase != task.PhaseDone {
			line += " (retrying: " + ts.LastError + ")"
		}
		if line != p.last[i] {
			p.last[i] = line
			fmt.Fprintf(p.e.stderr, "%s %s\n", p.e.now().Format("15:04:05"), line)
		}
	}
}

// waiting prints the line shown every -progress while the job waits.
func (p *progress) waiting(elapsed time.Duration, j *job.Job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.e.now()
	fmt.Fprintf(p.e.stderr, "%s %s elapsed: %s\n", now.Format("15:04:05"), elapsed.Round(time.Second), waitingFor(j, now, "waits"))
}

// waitingFor says which task of j waits (verb: "waits" or "was waiting"),
// and for what, e.g. "task 1/3 power off waits for the BMC to answer
// (attempt 3 failed: ...)".
func waitingFor(j *job.Job, now time.Time, verb string) string {
	if j == nil {
		return "the job was not stored yet"
	}
	if conditions.IsTrue(j.Status.Conditions, conditions.TypeCompleted) {
		return fmt.Sprintf("the job completed (%s)", j.Status.Result)
	}
	i := j.Status.CurrentTask
	if i >= len(j.Spec.Tasks) || i >= len(j.Status.Tasks) {
		return "the job waits to complete"
	}
	spec, st := j.Spec.Tasks[i], j.Status.Tasks[i]
	return fmt.Sprintf("task %d/%d %s %s for %s", i+1, len(j.Spec.Tasks), spec.Describe(), verb, waitsFor(spec, st, now))
}

// waitsFor is what a running task waits for, by its phase and kind.
func waitsFor(spec task.Spec, st task.Status, now time.Time) string {
	if st.LastError != "" {
		s := fmt.Sprintf("the BMC to answer (attempt %d failed: %s", max(st.Attempts, 1), st.LastError)
		if st.NextAttemptTime != nil && st.NextAttemptTime.After(now) {
			s += "; next try at " + st.NextAttemptTime.Local().Format("15:04:05")
		}
		return s + ")"
	}
	switch {
	case spec.WaitForBoot != nil && st.Phase != task.PhasePending:
		return "the server to report that it booted (its boot signals reach the boot tracker)"
	case st.Phase == task.PhasePending:
		return "its turn to start"
	case st.Phase == task.PhaseStarted:
		return "the BMC to accept the request"
	case spec.Power != nil:
		switch spec.Power.Op {
		case task.PowerOff, task.PowerSoftOff:
			return "the BMC to report power Off"
		default:
			return "the BMC to report power On"
		}
	case spec.BootDevice != nil:
		return fmt.Sprintf("the BMC to show the boot override %s", spec.BootDevice.Device)
	case spec.VirtualMedia != nil && spec.VirtualMedia.Eject:
		return "the BMC to show the virtual media ejected"
	case spec.VirtualMedia != nil:
		return "the BMC to show the image inserted"
	case spec.BMCReset != nil:
		return "the BMC to come back after its reset"
	case spec.FirmwareUpdate != nil:
		return firmwareWait(spec.FirmwareUpdate, st.Firmware)
	case spec.BIOS != nil:
		return "the BMC to show the BIOS attributes"
	}
	return "the BMC to confirm the change"
}

// phaseName is a task's progress word: a finished task says how it ended
// ("done", or "failed (<reason>)"), never "done" for a failure. The
// failure's message is not repeated here: it is in the result on standard
// output.
func phaseName(ts task.Status) string {
	switch ts.Phase {
	case task.PhaseStarted:
		return "sending"
	case task.PhaseRequested:
		return "verifying"
	case task.PhaseDone:
		switch ts.Result {
		case conditions.ResultSucceeded:
			return "done"
		case "":
			return "finished"
		default:
			// The reason only: the message is the result's, printed once
			// on standard output.
			word := strings.ToLower(string(ts.Result))
			if ts.Reason != "" {
				word += " (" + ts.Reason + ")"
			}
			return word
		}
	}
	return "pending"
}

// firmwareWait is what a firmware update waits for, from its stored BMC
// task: its progress, the reset, or the version.
func firmwareWait(a *task.FirmwareUpdateAction, fs *task.FirmwareStatus) string {
	switch {
	case fs == nil || fs.State == "":
		return "the BMC to start the update"
	case fs.State == "Running" && fs.Percent >= 0:
		return fmt.Sprintf("the BMC's update (%d%% done)", fs.Percent)
	case fs.State == "Running":
		return "the BMC's update"
	case fs.ResetTarget != "" && fs.ResetTime == nil:
		return "the reset of the " + fs.ResetTarget + " the update asks for"
	}
	v := fs.Version
	if v == "" {
		v = "unknown"
	}
	return fmt.Sprintf("%s to report version %s (now %s)", a.Component, a.Version, v)
}
