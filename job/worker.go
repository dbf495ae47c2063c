package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage"
)

// This file runs one step of a held job, on a goroutine of its own while the
// step's BMC calls are in flight (bounded by Config.Workers).

// stepOutcome is what a step reports back to the loop.
type stepOutcome struct {
	h    *held
	j    *Job  // the job as this step left it; nil: reload
	rev  int64 // j's revision
	res  StepResult
	err  error
	done bool // completed, or deleted: release the system
	// worker ran the step and waits for the next (nil: not a worker's).
	worker *stepWorker
}

// step loads the job if needed (j nil) and runs one Step under ctx, which
// ends when the lease's validity does.
func (r *Runner) step(ctx context.Context, h *held, j *Job, rev int64) stepOutcome {
	o := stepOutcome{h: h}
	if j == nil {
		rec, err := r.cfg.Store.Get(ctx, r.jobKey(h.job))
		if errors.Is(err, storage.ErrNotFound) {
			o.done = true // deleted: nothing left to run
			return o
		}
		if err != nil {
			o.err = err
			return o
		}
		j = new(Job)
		if err := unmarshalRecord(rec.Value, j); err != nil {
			r.log.Error(err, "decoding stored job failed; leaving it", "job", h.job)
			o.done = true
			return o
		}
		rev = rec.Revision
	}
	if j.Completed() {
		o.j, o.rev, o.done = j, rev, true
		return o
	}
	// The step adds the job's name itself: its logger here names the
	// system only, so no line carries "job" twice.
	res, err := r.stepper.Step(logr.NewContext(ctx, r.log.WithValues("system", h.sys)), j, r.persister(h.job, &rev))
	o.res, o.err = res, err
	switch {
	case err == nil:
		o.j, o.rev, o.done = j, rev, res.Done
	case errors.Is(err, storage.ErrNotFound):
		o.done = true // deleted
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
		r.own.note(name, n)
		if j.Completed() {
			r.signal(name) // Wait returns completed jobs only
		}
		return nil
	}
}

// ownWrites remembers the newest revision this runner wrote per job.
type ownWrites struct {
	mu  sync.Mutex
	rev map[string]int64
}

func (w *ownWrites) note(name string, rev int64) {
	w.mu.Lock()
	if rev > w.rev[name] {
		w.rev[name] = rev
	}
	w.mu.Unlock()
}

// covers reports whether the change of job name at revision rev is one this
// runner wrote (or older than one it wrote), like Runner.ownWrite, without
// forgetting anything: the change feed asks it while reading, before the
// scan sees the event. Only the scan forgets (ownWrite), and writes only
// raise a job's revision, so ownWrite later gives the same answer.
func (w *ownWrites) covers(name string, rev int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wr, ok := w.rev[name]
	return ok && rev <= wr
}

// ownWrite reports whether the change of job name at revision rev is one
// this runner wrote (or older than one it wrote).
func (r *Runner) ownWrite(name string, rev int64) bool {
	r.own.mu.Lock()
	defer r.own.mu.Unlock()
	w, ok := r.own.rev[name]
	if ok && rev >= w {
		delete(r.own.rev, name) // caught up: nothing newer of ours to skip
	}
	return ok && rev <= w
}

func decodeHead(data []byte, h *jobHead) error { return unmarshalRecord(data, h) }

// claimWant is a system to claim, with the first job of this runner's queue
// for it.
type claimWant struct {
	sys  string
	head string
	ep   bmc.Endpoint
}

// claimed is the result of one claim.
type claimed struct {
	claimWant
	job  string // the job to run: the lock's unfinished holder, or head
	rev  int64
	sent time.Time
	ok   bool
}

// claimAll claims systems concurrently, so a store with group commit
// batches the lock writes into few commits.
func (r *Runner) claimAll(ctx context.Context, want []claimWant) []claimed {
	out := make([]claimed, len(want))
	fanOut(len(want), func(i int) {
		w := want[i]
		job, rev, sent, ok := r.claim(ctx, w.sys, w.head)
		out[i] = claimed{claimWant: w, job: job, rev: rev, sent: sent, ok: ok}
	})
	return out
}
