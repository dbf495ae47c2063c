package job

import (
	"context"
	"time"
)

// The step's proof that its copy of the job is current (confirm), and what
// it gives back when the store refuses that copy (unlockTaken): docs/jobs.md,
// "No state change from a copy that has not proven itself current". Only
// the step machine stores the job: kinds record in their task's status, and
// ask for a store through their decisions.

// persist stores the job through the host's PersistFunc and notes what the
// write proved: a success confirms the step's copy (confirm); a failure
// before any success gives back a lock this step took anew (unlockTaken).
// A method, not a closure made per step: the Runner steps on its hot path.
func (r *stepRun) persist(ctx context.Context, j *Job) error {
	err := r.store(ctx, j)
	if err == nil {
		r.confirmed = true
	} else if r.takenAnew && !r.confirmed {
		r.unlockTaken(ctx)
	}
	return err
}

// confirm makes sure the step's copy of the job has proven itself current
// before a state-changing request: if no write of this step succeeded yet,
// it stores the job as it is (a compare-and-swap against the stored
// object). A stale copy — an informer cache that lags after an API-server
// restart, a replica that lost its lock, a retry scheduled by a write that
// was overtaken — fails here, with nothing sent. Every state-changing
// request of every kind is preceded by it (TestNoStateChangeBeforeAWrite):
// the task's action (act), a follow-up (followup.go), a restore
// (bootrestore.go); reads are not, so a polling step costs no write.
func (r *stepRun) confirm(ctx context.Context) error {
	if r.confirmed {
		return nil
	}
	return r.persist(ctx, r.j)
}

// unlockTaken gives back the lock this step took anew when the step's
// first write failed: the copy of the job was stale (another replica
// completed the job, or it was deleted) or the store is out, and nothing
// was sent. Without it a stale copy left its system locked for a whole
// lease after the job had completed (issue 33). Bounded, best effort: the
// lease expires anyway.
func (r *stepRun) unlockTaken(ctx context.Context) {
	r.takenAnew = false
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	if err := r.s.cfg.Locks.Unlock(uctx, r.ep.SystemKey(), r.j.Name); err != nil {
		r.log.Info("giving back a lock taken for a copy of the job the store refused failed; it runs out with its lease", "error", err.Error())
	}
}

// unlockTimeout bounds an unlock the step makes on its own (unlockTaken;
// after a job's completion on the controller path, a failed one is retried
// by the job's next Step).
const unlockTimeout = 30 * time.Second

// storeError is a write of the step that failed, carried out of code that
// returns errors (a kind's store before its request, a follow-up's intent,
// a confirm): handleErr ends the step with it, as every failed write does
// (PersistFunc), and a restore records nothing.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }
