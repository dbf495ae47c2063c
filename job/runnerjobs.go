package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job/internal/sched"
	"github.com/bmckit/bmckit/storage"
)

// This file is the jobs side of the Runner's scheduling engine
// (job/internal/sched, which knows no job type): runnerJobs implements
// sched.Jobs with one step of a held job, the persist function that writes
// its record by compare-and-swap, the completion of jobs that need no BMC,
// and the decoding of a stored job's head.

// runnerJobs is a Runner as the engine's sched.Jobs: its methods are
// exported for the interface, and so are not the Runner's.
type runnerJobs Runner

var _ sched.Jobs = (*runnerJobs)(nil)

// jobHead is the part of a stored job the scheduler needs; decoding only it
// skips most of the record's allocations.
type jobHead struct {
	CancelRequested bool `json:"cancelRequested"`
	Spec            struct {
		BMC string `json:"bmc"`
	} `json:"spec"`
	Status struct {
		StartTime  *time.Time `json:"startTime"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

func (h *jobHead) completed() bool {
	for _, c := range h.Status.Conditions {
		if c.Type == "Completed" {
			return c.Status == "True"
		}
	}
	return false
}

// Head implements sched.Jobs.
func (x *runnerJobs) Head(data []byte) (sched.Head, error) {
	var h jobHead
	if err := unmarshalRecord(data, &h); err != nil {
		return sched.Head{}, err
	}
	return sched.Head{BMC: h.Spec.BMC, Started: h.Status.StartTime != nil, CancelRequested: h.CancelRequested, Completed: h.completed()}, nil
}

// Endpoint implements sched.Jobs with the Stepper's cache.
func (x *runnerJobs) Endpoint(bmcURL string) (bmc.Endpoint, error) {
	return x.stepper.eps.Parse(bmcURL)
}

// Step implements sched.Jobs: the copy it keeps is the *Job a step left.
func (x *runnerJobs) Step(ctx context.Context, job, sys string, c sched.Copy) sched.Outcome {
	j, _ := c.Job.(*Job)
	return (*Runner)(x).step(ctx, job, sys, j, c.Rev)
}

// CompleteWithoutBMC implements sched.Jobs.
func (x *runnerJobs) CompleteWithoutBMC(ctx context.Context, job string) {
	(*Runner)(x).completeWithoutBMC(ctx, job)
}

// Signal implements sched.Jobs: it wakes the job's Wait calls.
func (x *runnerJobs) Signal(job string) { (*Runner)(x).signal(job) }

// Release implements sched.Jobs: it is the Stepper's.
func (x *runnerJobs) Release(ctx context.Context, job, bmcURL string) error {
	return x.stepper.Release(ctx, job, bmcURL)
}

// Close implements sched.Jobs: it closes the Stepper's pool.
func (x *runnerJobs) Close(ctx context.Context) error { return x.stepper.Close(ctx) }

// step loads job name if needed (j nil) and runs one Step of it, on system
// sys, under ctx, which ends when the lease's validity does.
func (r *Runner) step(ctx context.Context, name, sys string, j *Job, rev int64) sched.Outcome {
	var o sched.Outcome
	if j == nil {
		rec, err := r.cfg.Store.Get(ctx, r.jobKey(name))
		if errors.Is(err, storage.ErrNotFound) {
			o.Done = true // deleted: nothing left to run
			return o
		}
		if err != nil {
			o.Err = err
			return o
		}
		j = new(Job)
		if err := unmarshalRecord(rec.Value, j); err != nil {
			r.log.Error(err, "decoding stored job failed; leaving it", "job", name)
			o.Done = true
			return o
		}
		rev = rec.Revision
	}
	if j.Completed() {
		o.Copy, o.Done = sched.Copy{Job: j, Rev: rev}, true
		return o
	}
	// The step adds the job's name itself: its logger here names the
	// system only, so no line carries "job" twice.
	res, err := r.stepper.Step(logr.NewContext(ctx, r.log.WithValues("system", sys)), j, r.persister(name, &rev))
	o.After, o.Err = res.RequeueAfter, err
	switch {
	case err == nil:
		o.Copy, o.Done = sched.Copy{Job: j, Rev: rev}, res.Done
	case errors.Is(err, storage.ErrNotFound):
		o.Done = true // deleted
	}
	return o
}

// persister returns the PersistFunc of job name: a compare-and-swap on its
// record at *rev, which it advances. The revisions it writes are noted, so
// the scheduler skips their change events without decoding them.
func (r *Runner) persister(name string, rev *int64) PersistFunc {
	key := r.jobKey(name)
	return func(ctx context.Context, j *Job) error {
		var n int64
		err := encodePooled(j, func(data []byte) error {
			var err error
			n, err = r.cfg.Store.Update(ctx, key, data, *rev)
			if err == nil && r.cfg.OnUpdate != nil {
				var cp Job // a deep copy: the step goes on mutating j
				if unmarshalRecord(data, &cp) == nil {
					defer r.cfg.OnUpdate(cp)
				}
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("persisting job %q: %w", name, err)
		}
		*rev = n
		r.sched.Wrote(name, n)
		if j.Completed() {
			r.signalDone(name, j) // Wait returns completed jobs only
		}
		return nil
	}
}

// completeWithoutBMC completes a job whose step touches no BMC (canceled
// before it started, or with an invalid BMC address) without its system's
// lock. A concurrent writer makes the compare-and-swap fail and the job is
// looked at again on a later scan.
func (r *Runner) completeWithoutBMC(ctx context.Context, name string) {
	j, rev, err := r.load(ctx, name)
	if err != nil || j.Completed() {
		return
	}
	if _, epErr := r.stepper.eps.Parse(j.Spec.BMC); epErr == nil && !(j.CancelRequested && j.Status.StartTime == nil) {
		return
	}
	_, err = r.stepper.Step(ctx, j, r.persister(name, &rev))
	if err != nil && ctx.Err() == nil && !errors.Is(err, storage.ErrConflict) {
		r.log.Error(err, "completing a job that needs no BMC failed; will retry", "job", name)
	}
}
