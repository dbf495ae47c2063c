package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/internal/bootoverride"
	"github.com/bmckit/bmckit/task"
)

// Putting back boot overrides.
//
// A boot-device task reads the override before its first change and stores
// it in its task.Status.BootRestore, state Pending, before it sends the
// change (intent before action): a job resumed after a crash still knows
// what to put back. The job puts it back
//
//   - for an emulated one-time override, after the boot it was for: once a
//     later power on, cycle or reset task succeeded (and the first
//     wait-for-boot task after that one, if any), checked at the start of
//     every advance (restoreDue), so a resumed job does it too;
//   - for any change, emulated or not, when the job fails or is canceled
//     (restoreAtEnd, from finish, before the completion is stored);
//   - for an emulated one still pending when the job succeeds (no boot
//     happened in the job), at the end too.
//
// A job that succeeded keeps a non-emulated override (state Kept).

// restoreTimeout bounds one restore (a read, a PATCH, its read-back).
const restoreTimeout = 30 * time.Second

// bootedAfter reports whether the boot an override set by task i was for
// has happened: a later power on, cycle or reset task succeeded, and so did
// the first wait-for-boot task after that one, if the job has one.
func (r *stepRun) bootedAfter(i int) bool {
	spec, st := r.j.Spec.Tasks, r.j.Status.Tasks
	for p := i + 1; p < len(spec); p++ {
		if pc, ok := kindOf(&spec[p]).(powerChanger); !ok || !pc.boots() {
			continue
		}
		if st[p].Result != conditions.ResultSucceeded {
			return false
		}
		for w := p + 1; w < len(spec); w++ {
			if _, ok := kindOf(&spec[w]).(bootWaiter); ok {
				return st[w].Result == conditions.ResultSucceeded
			}
		}
		return true
	}
	return false
}

// restoreDue puts back, once, the emulated overrides whose boot happened
// (see bootedAfter), latest first, and stores the outcome. A try that
// fails transiently leaves the record Pending for the job's end. It returns
// only the store's error.
func (r *stepRun) restoreDue(ctx context.Context) error {
	j := r.j
	for i := len(j.Status.Tasks) - 1; i >= 0; i-- {
		rec := j.Status.Tasks[i].BootRestore
		if rec == nil || !rec.Emulated || rec.State != task.BootRestorePending || rec.Attempts > 0 || !r.bootedAfter(i) {
			continue
		}
		if err := r.restore(ctx, i, false); err != nil {
			return err
		}
		if err := r.persist(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

// restoreAtEnd settles every pending record as the job completes with
// result: a succeeded job keeps non-emulated overrides and puts emulated
// ones back; a failed or canceled job puts every changed override back,
// latest first. It returns a suffix for the job's message when a restore
// failed ("" otherwise). The outcome is stored with the completion. An
// error means the step was fenced or ended before a restore could be made:
// the job must not complete in this step.
func (r *stepRun) restoreAtEnd(ctx context.Context, result conditions.Result) (string, error) {
	j := r.j
	var failed []string
	for i := len(j.Status.Tasks) - 1; i >= 0; i-- {
		rec := j.Status.Tasks[i].BootRestore
		if rec == nil || rec.State != task.BootRestorePending {
			continue
		}
		if result == conditions.ResultSucceeded && !rec.Emulated {
			rec.State = task.BootRestoreKept
			rec.Message = "the job succeeded; the override the task set stays"
			continue
		}
		if err := r.restore(ctx, i, true); err != nil {
			return "", err
		}
		if rec.State == task.BootRestoreFailed {
			failed = append(failed, fmt.Sprintf("task %d: %s", i+1, rec.Message))
		}
	}
	if len(failed) == 0 {
		return "", nil
	}
	return "; putting the boot override back failed (" + strings.Join(failed, "; ") + ")", nil
}

// restore puts back the override task i found, verifies it, and records
// the outcome in memory. final says no later try follows: a transient
// failure is then Failed too. It returns an error, recording nothing, when
// the step itself was fenced or ended (its lease may have lapsed): that is
// no outcome of the restore, which the next step under a valid lease makes.
func (r *stepRun) restore(ctx context.Context, i int, final bool) error {
	rec := r.j.Status.Tasks[i].BootRestore
	base := r.base
	if base == nil {
		base = ctx
	}
	rctx, cancel := context.WithTimeout(base, restoreTimeout)
	defer cancel()
	prev := bootoverride.FromTask(rec.Previous)
	msg, err := r.putBack(r.callCtx(rctx, i), prev)
	if errors.Is(err, bmc.ErrFenced) {
		return err
	}
	var se *storeError
	if errors.As(err, &se) {
		return se.err // the store refused this copy: nothing was sent, nothing to record
	}
	if base.Err() != nil {
		return base.Err()
	}
	rec.Attempts++
	switch {
	case err == nil:
		rec.State = task.BootRestoreRestored
		rec.Message = msg
		r.log.Info("boot override put back", "task", i+1, "override", msg)
	case !final && bmc.IsTransient(err):
		rec.Message = "putting back " + bootoverride.Describe(prev) + " failed; trying again when the job ends: " + err.Error()
		r.log.Info("putting the boot override back failed; will try again when the job ends", "task", i+1, "error", err.Error())
	default:
		rec.State = task.BootRestoreFailed
		rec.Message = "putting back " + bootoverride.Describe(prev) + " failed: " + err.Error()
		r.log.Info("putting the boot override back failed", "task", i+1, "error", err.Error())
	}
	return nil
}

// putBack sets prev unless the BMC still holds it, and reads it back.
func (r *stepRun) putBack(ctx context.Context, prev bmc.BootOverride) (string, error) {
	drv := r.drv
	if drv == nil {
		d, err := r.driver(ctx)
		if err != nil {
			return "", err
		}
		r.drv, drv = d, d
	}
	getter, ok := drv.(bmc.BootOverrideGetter)
	setter, ok2 := drv.(bmc.BootOverrideSetter)
	if !ok || !ok2 {
		return "", notSupported(&r.ep, "restore the boot override")
	}
	cur, err := getter.BootOverride(ctx) // the step's last read, where the driver keeps it
	if err != nil {
		return "", err
	}
	if bootoverride.Matches(prev, cur) {
		return "the BMC holds " + bootoverride.Describe(cur) + " as found; nothing to put back", nil
	}
	if err := r.confirm(ctx); err != nil { // a state change: prove the copy current first
		return "", &storeError{err}
	}
	if rb, ok := drv.(bootReadBackSetter); ok {
		_, err = rb.SetBootOverrideReadBack(ctx, prev)
	} else {
		err = setter.SetBootOverride(ctx, prev)
	}
	if err != nil {
		return "", err
	}
	got, err := getter.BootOverride(ctx)
	if err != nil {
		return "", err
	}
	if !bootoverride.Matches(prev, got) {
		return "", bmc.Permanent(fmt.Errorf("the BMC reports %s after the restore", bootoverride.Describe(got)))
	}
	return "put back " + bootoverride.Describe(got), nil
}
