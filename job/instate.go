package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

// InState reports whether spec's effect is already present on its system,
// by each task's own check, without a state-changing request: a fleet
// rollout (package rollout) skips a server that is in state rather than
// run a job on it. It validates spec (an invalid one is an error wrapping
// [ErrInvalidSpec]), then takes the tasks in order. A task whose effect
// cannot be read back as "already there" (a power cycle or reset, bmcReset,
// nmi, waitForBoot, credential rotation, a read such as inventory: kinds
// the Stepper sends again when it resumes them) means not in state, why
// "task N (<task>) cannot be read back", and the BMC is not asked.
// Otherwise each task is checked as a task resumed after a crash is
// (KindTask.Sent false, on a scratch status; a custom kind's Check sees
// KindTask.Job empty): the first that is not done gives false, why
// "task N (<task>): <what its check read>". All done: true, why "every
// task's effect is present".
//
// The reads go through the Stepper's connection pool, with the job's
// credentials resolved as a step resolves them (pending credentials of a
// rotation included), like a monitor's reads: they share the system's
// session with its jobs. They take no system lock and carry no job's
// lease: any fence, job call (CallFromContext) or send hook in ctx is
// dropped, since nothing they send changes the server. An error (a BMC
// that does not answer, credentials that do not resolve) means "not known
// to be in state"; ctx bounds the whole check. Safe for concurrent use.
func (s *Stepper) InState(ctx context.Context, spec Spec) (inState bool, why string, err error) {
	if err := s.validate(&spec); err != nil {
		return false, "", err
	}
	kinds := make([]kind, len(spec.Tasks))
	for i := range spec.Tasks {
		k := kindOf(&spec.Tasks[i])
		if _, own := k.(statusChecked); own || !k.usesBMC() || !k.recheckable() {
			return false, fmt.Sprintf("task %d (%s) cannot be read back", i+1, spec.Tasks[i].Describe()), nil
		}
		kinds[i] = k
	}
	ep, _ := s.eps.Parse(spec.BMC) // validate parsed it
	log := logr.FromContextOrDiscard(ctx)
	if log.GetSink() == nil || isDiscard(log) {
		log = s.cfg.Logger
	}
	// Reads only, on no job's behalf: no lease fences them, no job is
	// credited with them, and no send hook (a power slot) holds them.
	ctx = context.WithValue(bmc.WithSendHook(bmc.WithFence(ctx, nil), nil), callKey{}, nil)
	ctx = bmc.WithReadScope(ctx)
	creds, err := s.cfg.Credentials.Resolve(ctx, spec.CredentialsRef)
	if err != nil {
		return false, "", fmt.Errorf("job: resolving credentials %q to read %s: %w", spec.CredentialsRef, ep.SystemKey(), err)
	}
	var drv bmc.Driver
	if _, _, err := s.pending.Try(ctx, s.cfg.Credentials, spec.CredentialsRef, creds, func(c bmc.Credentials) (err error) {
		drv, err = s.pool.Get(ctx, ep, c)
		return err
	}); err != nil {
		return false, "", fmt.Errorf("job: connecting to %s: %w", ep.SystemKey(), err)
	}
	j := &Job{Spec: spec, Status: Status{Tasks: make([]task.Status, len(spec.Tasks))}} // scratch
	for i, k := range kinds {
		t := &taskView{KindTask: KindTask{BMC: drv, Task: i}, status: &j.Status.Tasks[i], job: j, ep: &ep,
			log: log, now: s.cfg.Clock.Now(), cfg: &s.kc}
		done, observed, err := k.check(ctx, t)
		var tf *taskFailure
		switch {
		case errors.As(err, &tf): // e.g. a bios verifyOnly that differs
			return false, fmt.Sprintf("task %d (%s): %s", i+1, spec.Tasks[i].Describe(), tf.msg), nil
		case err != nil:
			if errors.Is(err, bmc.ErrSessionExpired) {
				s.pool.Invalidate(ctx, ep) // the next read logs in again
			}
			return false, "", fmt.Errorf("job: reading task %d (%s) back on %s: %w", i+1, spec.Tasks[i].Describe(), ep.SystemKey(), err)
		case !done:
			return false, fmt.Sprintf("task %d (%s): %s", i+1, spec.Tasks[i].Describe(), observed), nil
		}
	}
	return true, "every task's effect is present", nil
}

// InState is [Stepper.InState] on the Runner's Stepper: its connection
// pool (sessions shared with the Runner's jobs), credentials resolver and
// kinds. It needs no Store and takes no system: it runs whether or not
// [Runner.Start] is running.
func (r *Runner) InState(ctx context.Context, spec Spec) (bool, string, error) {
	return r.stepper.InState(ctx, spec)
}
