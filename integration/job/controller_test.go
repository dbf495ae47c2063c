//go:build linux

package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// A controller replica without leader election, as TestStepperSIGSTOP runs
// two of: every replica steps every job with job.Stepper.Step. Each job lives
// in its own record (under ctrlJobPrefix, JSON of job.Job, as a host's
// object), and persist is a compare-and-swap update of that record, as a
// status patch with a resourceVersion is; a conflict ends the step and the
// job is read again. Whether a replica may act on a job's system is the
// Stepper's Locks' business alone.
//
// Per system, the controller runs jobs in the order of their names' index
// (ctrlJobName): a job is stepped once its predecessor completed, as a
// controller whose objects name a predecessor would.

const ctrlJobPrefix = "ctrl/jobs/"

// ctrlJobName is the name of run's n-th job on system sys.
func ctrlJobName(run, sys, n int) string { return fmt.Sprintf("r%02d-s%d-j%d", run, sys, n) }

// ctrlPredecessor is the job that must complete before name starts, or "".
func ctrlPredecessor(name string) string {
	i := strings.LastIndex(name, "-j")
	if i < 0 {
		return ""
	}
	n, err := strconv.Atoi(name[i+2:])
	if err != nil || n == 0 {
		return ""
	}
	return name[:i+2] + strconv.Itoa(n-1)
}

// controller steps every job stored under ctrlJobPrefix in store.
type controller struct {
	store   storage.Store
	stepper *job.Stepper
	// onPersist is called after each successful persist of a job.
	onPersist func(j *job.Job)
	// scan is how often the store is listed for new jobs; retry how soon a
	// step that failed (a persist conflict, a store error) is tried again.
	scan, retry time.Duration

	mu      sync.Mutex
	running map[string]bool // jobs with a worker
	wg      sync.WaitGroup
}

// run steps jobs until ctx ends, then waits for every worker to return.
func (c *controller) run(ctx context.Context) {
	c.running = map[string]bool{}
	tick := time.NewTicker(c.scan)
	defer tick.Stop()
	for {
		if recs, err := c.store.List(ctx, ctrlJobPrefix); err == nil {
			for _, rec := range recs {
				name := strings.TrimPrefix(rec.Key, ctrlJobPrefix)
				c.mu.Lock()
				start := !c.running[name]
				c.running[name] = true
				c.mu.Unlock()
				if start {
					c.wg.Add(1)
					go c.work(ctx, name)
				}
			}
		}
		select {
		case <-ctx.Done():
			c.wg.Wait()
			return
		case <-tick.C:
		}
	}
}

// work is one job's reconcile loop: read it, step it, wait as the step
// said. It returns once the job completed (and its lock was released) or
// ctx ended.
func (c *controller) work(ctx context.Context, name string) {
	defer c.wg.Done()
	key := ctrlJobPrefix + name
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for ctx.Err() == nil {
		rec, err := c.store.Get(ctx, key)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return
			}
			wait(c.retry)
			continue
		}
		j := new(job.Job)
		if err := json.Unmarshal(rec.Value, j); err != nil {
			panic(fmt.Sprintf("job record %s: %v", key, err))
		}
		if !j.Completed() {
			if p := ctrlPredecessor(name); p != "" && !c.completed(ctx, p) {
				wait(c.retry)
				continue
			}
		}
		rev := rec.Revision
		res, err := c.stepper.Step(ctx, j, func(ctx context.Context, j *job.Job) error {
			data, err := json.Marshal(j)
			if err != nil {
				return err
			}
			n, err := c.store.Update(ctx, key, data, rev)
			if err != nil {
				return err
			}
			rev = n
			c.onPersist(j)
			return nil
		})
		switch {
		case err != nil:
			wait(c.retry) // read again: someone else wrote it, or the store failed
		case res.Done:
			return
		default:
			wait(res.RequeueAfter)
		}
	}
}

func (c *controller) completed(ctx context.Context, name string) bool {
	rec, err := c.store.Get(ctx, ctrlJobPrefix+name)
	if err != nil {
		return false
	}
	var j job.Job
	return json.Unmarshal(rec.Value, &j) == nil && j.Completed()
}

// relockReporter reports (as "relocked <job>") every Lock that let a job
// that has already completed act on its system: a step of a copy of the job
// read before another replica completed it (and unlocked the system) takes
// the free lock again, and its requests carry a valid fence.
type relockReporter struct {
	syslock.Locker
	store storage.Store
	out   *replicaOut
}

func (l relockReporter) Lock(ctx context.Context, system, holder string) (time.Duration, error) {
	d, _, err := l.TakeLock(ctx, system, holder)
	return d, err
}

// TakeLock passes syslock.Taker through (a wrapper that hid it would keep
// the Stepper from confirming a job before acting on a system it took).
func (l relockReporter) TakeLock(ctx context.Context, system, holder string) (time.Duration, bool, error) {
	d, taken, err := l.Locker.(syslock.Taker).TakeLock(ctx, system, holder)
	if err == nil {
		if rec, gerr := l.store.Get(ctx, ctrlJobPrefix+holder); gerr == nil {
			var j job.Job
			if json.Unmarshal(rec.Value, &j) == nil && j.Completed() {
				l.out.printf("relocked %s", holder)
			}
		}
	}
	return d, taken, err
}
