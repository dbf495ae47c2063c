package job

import (
	"context"

	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// A task's next attempt: a retry after a transient error (after the Retry
// backoff), or its action sent again because its effect did not show
// (resend). Either is stored before the step ends, and counted.

// retry schedules task i's next attempt after transient error err, with
// the Retry backoff.
func (r *stepRun) retry(ctx context.Context, i int, err error) (StepResult, error) {
	ts := &r.j.Status.Tasks[i]
	ts.LastError = err.Error()
	ts.Attempts++
	delay := r.s.cfg.Retry.Delay(ts.Attempts - 1)
	next := r.now.Add(delay)
	ts.NextAttemptTime = timestamp.Ptr(next)
	r.log.Info("transient BMC error; will retry", "task", i+1, "attempt", ts.Attempts, "in", delay.String(), "error", err.Error())
	if perr := r.persist(ctx, r.j); perr != nil {
		return StepResult{}, perr
	}
	return StepResult{RequeueAfter: delay}, nil
}

// resend goes back to PhaseStarted so the next step re-checks and re-sends.
func (r *stepRun) resend(ctx context.Context, i int, why string) (StepResult, error) {
	ts := &r.j.Status.Tasks[i]
	r.log.Info("effect not observed; sending the action again", "task", i+1, "why", why)
	r.s.waits.End(r.j.Name) // the next attempt is a new wait
	ts.Phase = task.PhaseStarted
	ts.Attempts++
	ts.LastError = why
	next := r.now.Add(r.s.cfg.PollInterval)
	ts.NextAttemptTime = timestamp.Ptr(next)
	if err := r.persist(ctx, r.j); err != nil {
		return StepResult{}, err
	}
	return StepResult{RequeueAfter: r.s.cfg.PollInterval}, nil
}
