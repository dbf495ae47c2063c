package job

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/internal/owner"
	"github.com/bmckit/bmckit/job/internal/health"
	"github.com/bmckit/bmckit/job/internal/hookcall"
	"github.com/bmckit/bmckit/job/internal/sched"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// Config configures a Runner. The zero value of every field but Store and
// Dialer means its default.
type Config struct {
	// StepperConfig holds the Stepper's settings, which the Runner's
	// Stepper uses (see [StepperConfig] for each; Dialer is required).
	// Locks and Wake must be left unset: the Runner locks systems and
	// wakes jobs itself (docs/jobs.md, "Exclusivity").
	StepperConfig

	// Store holds jobs and system locks. Required.
	Store storage.Store
	// Workers bounds how many steps run at once, i.e. jobs with BMC calls
	// in flight; a job waiting for a power change, a boot or a retry holds
	// no worker (and no goroutine). Defaults to 10,000: a step costs a
	// goroutine only while its calls are in flight, and the BMCs themselves
	// are protected per endpoint (EndpointConcurrency, the drivers' request
	// budgets). A runner claims no more systems than its workers can start,
	// and fewer while the store's writes queue (docs/jobs.md, "Claims
	// follow the workers and the store").
	Workers int
	// EndpointConcurrency bounds how many jobs this runner runs at once on
	// the systems behind one endpoint (one host:port: a chassis manager, a
	// multi-node Redfish service, an emulator). They share one BMC session
	// where the driver allows it. Defaults to 32.
	EndpointConcurrency int
	// Owner names this runner in system locks and in its heartbeat record
	// (<KeyPrefix>runners/<Owner>, by which replicas count each other to
	// share the systems). It must be unique among the live runners sharing
	// a Store; a runner restarted with the same Owner (a StatefulSet pod
	// name, a host name) takes its own locks back at once instead of
	// waiting for their leases to expire. Defaults to host-pid-random,
	// which is unique but never taken back.
	Owner string
	// LeaseDuration is how long a system lock lasts without renewal; a dead
	// runner's jobs are resumed by another runner after the lock was seen
	// unchanged for this long. A runner stops touching a BMC a sixth of it
	// before its own lease may have expired. Defaults to 30s.
	LeaseDuration time.Duration
	// ScanInterval is how often the Store is scanned for new jobs and for
	// changes made by other replicas. Defaults to 1s. Jobs submitted through
	// this Runner are picked up at once.
	ScanInterval time.Duration
	// KeyPrefix is prepended to the keys of the runner's jobs and of its
	// replicas' heartbeats: runners with different prefixes keep separate
	// job namespaces in one Store. System locks are not under it (they live
	// under syslock.KeyPrefix, so that runners of every namespace exclude each
	// other on a system; see docs/jobs.md, "Exclusivity"). Defaults to
	// "bmckit/".
	KeyPrefix string
	// OnUpdate, if set, is called after every write of a job by this runner
	// (intent, result, completion) with a copy of the job, from the worker
	// running it. It must not block; use it for progress output or metrics.
	OnUpdate func(j Job)
}

// Runner runs jobs kept in a Store with a bounded pool of workers.
//
// Scheduling (docs/jobs.md has the whole model): at most one job acts on a
// system at any moment, across goroutines, runners and replicas sharing the
// Store, through one lock record per system written by compare-and-swap. Per
// system, jobs run in the order they were submitted (the store revision of
// their creation, not any clock), and a job that has started is always
// resumed before another starts. Systems behind one endpoint run in parallel,
// up to Config.EndpointConcurrency. A stopped or crashed runner's jobs are
// resumed by another without re-running finished tasks; a store outage pauses
// work instead of ending it.
//
// Start blocks and fits controller-runtime's manager.Runnable.
type Runner struct {
	cfg     Config
	stepper *Stepper
	log     logr.Logger
	// sched is the scheduling engine: the queues, claims, leases and fences,
	// the event loop and its workers (job/internal/sched). It knows jobs
	// through runnerJobs (runnerjobs.go).
	sched *sched.Engine

	mu      sync.Mutex
	waiters map[string]*waiters // per job, closed by signal
	started bool
	health  health.State // what Healthz reports (health.go)
}

// NewRunner validates cfg and applies defaults.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Store == nil {
		return nil, errors.New("job: Config.Store is required")
	}
	if cfg.Dialer == nil {
		return nil, errors.New("job: Config.Dialer is required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 10000
	}
	if cfg.EndpointConcurrency <= 0 {
		cfg.EndpointConcurrency = 32
	}
	if cfg.Owner == "" {
		cfg.Owner = owner.Default()
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.ScanInterval <= 0 {
		cfg.ScanInterval = time.Second
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = syslock.DefaultNamespace
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	if cfg.Locks != nil || cfg.Wake != nil {
		return nil, errors.New("job: Config.Locks and Config.Wake must be unset: the Runner locks systems and wakes jobs itself")
	}
	r := &Runner{cfg: cfg, log: cfg.Logger, waiters: map[string]*waiters{}}
	r.sched = sched.New(sched.Config{Jobs: (*runnerJobs)(r), Store: cfg.Store, KeyPrefix: cfg.KeyPrefix, Owner: cfg.Owner,
		LeaseDuration: cfg.LeaseDuration, ScanInterval: cfg.ScanInterval, Workers: cfg.Workers,
		EndpointConcurrency: cfg.EndpointConcurrency, Clock: cfg.Clock, Log: r.log, Health: &r.health,
		Queue: hookcall.Wrap(r.log, cfg.Observer.Queue), LeaseLost: hookcall.Wrap(r.log, cfg.Observer.LeaseLost)})
	sc := cfg.StepperConfig
	sc.Wake = r.sched.Wake
	sc.Locks = syslock.NoLocking // the Runner's own locks and fences (job/internal/sched; syslock.Fence)
	st, err := NewStepper(sc)
	if err != nil {
		return nil, err
	}
	r.stepper = st
	return r, nil
}

// Start runs jobs until ctx is done, then waits for in-flight steps to stop
// and releases its system locks (keeping each unfinished job as its system's
// holder, so the next runner resumes it first). It returns nil after a clean
// stop. A Runner can be started once.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("job: Runner already started")
	}
	r.started = true
	r.mu.Unlock()
	return r.sched.Run(ctx) // job/internal/sched
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,198}[a-zA-Z0-9])?$`)

func (r *Runner) jobKey(name string) string { return r.cfg.KeyPrefix + "jobs/" + name }

// Submit validates spec and stores a new job named name. Nothing is stored
// if the spec or name is invalid; an existing job with the name is an error
// wrapping storage.ErrExists.
func (r *Runner) Submit(ctx context.Context, name string, spec Spec) (*Job, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("job: invalid name %q: use 1-200 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", truncate(name, 80))
	}
	if err := r.stepper.validate(&spec); err != nil {
		return nil, fmt.Errorf("job %q: %w", name, err)
	}
	j := &Job{Name: name, Generation: 1, CreatedAt: r.cfg.Clock.Now().UTC(), Spec: spec}
	data, err := marshalRecord(j)
	if err != nil {
		return nil, err
	}
	cp := copyJob(j)
	rev, err := r.cfg.Store.Create(ctx, r.jobKey(name), data)
	if err != nil {
		return nil, fmt.Errorf("job %q: storing: %w", name, err)
	}
	r.sched.Created(name, sched.Copy{Job: cp, Rev: rev})
	r.sched.Poke()
	return j, nil
}

// copyJob is a deep copy of j: for Submit, made before the job is created,
// so that keeping it (sched.Engine.Created), right after, is quick and the
// scan rarely reads the create before it.
func copyJob(j *Job) *Job {
	cp := new(Job)
	*cp = *j
	j.Spec.DeepCopyInto(&cp.Spec)
	j.Status.DeepCopyInto(&cp.Status)
	return cp
}

// Pool is the Runner's BMC connection pool, for components that must share
// its sessions (package monitor reads systems through it, so it never opens
// a second session next to a job). The Runner owns it and closes it when
// Start returns.
func (r *Runner) Pool() *connpool.Pool { return r.stepper.Pool() }

// Get returns the stored job.
func (r *Runner) Get(ctx context.Context, name string) (*Job, error) {
	j, _, err := r.load(ctx, name)
	return j, err
}

// List returns every stored job, sorted by creation time then name.
func (r *Runner) List(ctx context.Context) ([]*Job, error) {
	recs, err := r.cfg.Store.List(ctx, r.cfg.KeyPrefix+"jobs/")
	if err != nil {
		return nil, err
	}
	jobs := make([]*Job, 0, len(recs))
	for _, rec := range recs {
		var j Job
		if err := unmarshalRecord(rec.Value, &j); err != nil {
			r.log.Error(err, "skipping undecodable job record", "key", rec.Key)
			continue
		}
		jobs = append(jobs, &j)
	}
	sort.SliceStable(jobs, func(a, b int) bool {
		if !jobs[a].CreatedAt.Equal(jobs[b].CreatedAt) {
			return jobs[a].CreatedAt.Before(jobs[b].CreatedAt)
		}
		return jobs[a].Name < jobs[b].Name
	})
	return jobs, nil
}

// Cancel asks the job to stop; it completes with result Canceled at its
// next step (at once, touching no BMC, if it has not started). Canceling a
// completed job does nothing.
func (r *Runner) Cancel(ctx context.Context, name string) error {
	_, err := storage.Modify(ctx, r.cfg.Store, r.jobKey(name), func(cur *storage.Record) ([]byte, error) {
		if cur == nil {
			return nil, fmt.Errorf("job %q: %w", name, storage.ErrNotFound)
		}
		var j Job
		if err := unmarshalRecord(cur.Value, &j); err != nil {
			return nil, fmt.Errorf("job %q: decoding stored record: %w", name, err)
		}
		if j.Completed() || j.CancelRequested {
			return nil, storage.ErrNoChange
		}
		j.CancelRequested = true
		return marshalRecord(&j)
	})
	if err != nil {
		return err
	}
	r.signal(name)
	r.sched.Poke()
	return nil
}

// Delete removes a job record. A running job stops at its next write.
func (r *Runner) Delete(ctx context.Context, name string) error {
	return r.cfg.Store.Delete(ctx, r.jobKey(name), 0)
}

// Wait blocks until the job is Completed (or ctx is done) and returns it.
// It wakes when this runner writes the job or sees another replica's write
// (while started), and otherwise re-reads it every ScanInterval.
func (r *Runner) Wait(ctx context.Context, name string) (*Job, error) {
	for {
		w := r.waitCh(name)
		j, err := r.Get(ctx, name)
		if err != nil || j.Completed() {
			r.unwait(name, w)
			return j, err
		}
		select {
		case <-ctx.Done():
			r.unwait(name, w)
			return j, ctx.Err()
		case <-w.ch:
			if w.done != nil {
				// This runner completed it: its own state, not the
				// record read back and decoded.
				return copyJob(w.done), nil
			}
		case <-r.cfg.Clock.After(r.cfg.ScanInterval):
			r.unwait(name, w)
		}
	}
}

// waiters are the Wait calls of one job: n of them, woken together when ch
// closes. done, when not nil, is the job as this runner completed it.
type waiters struct {
	ch   chan struct{}
	n    int
	done *Job
}

func (r *Runner) waitCh(name string) *waiters {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.waiters[name]
	if w == nil {
		w = &waiters{ch: make(chan struct{})}
		r.waiters[name] = w
	}
	w.n++
	return w
}

// unwait forgets a Wait that returns (or loops) without being signaled, so
// that Waits on completed jobs do not leave an entry behind each.
func (r *Runner) unwait(name string, w *waiters) {
	r.mu.Lock()
	if w.n--; w.n == 0 && r.waiters[name] == w {
		delete(r.waiters, name)
	}
	r.mu.Unlock()
}

// signal wakes the waiters of job name.
func (r *Runner) signal(name string) { r.signalDone(name, nil) }

// signalDone wakes the waiters of job name, which this runner just stored
// as j, completed; they return a copy of it.
func (r *Runner) signalDone(name string, j *Job) {
	r.mu.Lock()
	if w := r.waiters[name]; w != nil {
		if j != nil {
			w.done = copyJob(j)
		}
		close(w.ch)
		delete(r.waiters, name)
	}
	r.mu.Unlock()
}

func (r *Runner) load(ctx context.Context, name string) (*Job, int64, error) {
	rec, err := r.cfg.Store.Get(ctx, r.jobKey(name))
	if err != nil {
		return nil, 0, fmt.Errorf("job %q: %w", name, err)
	}
	var j Job
	if err := unmarshalRecord(rec.Value, &j); err != nil {
		return nil, 0, fmt.Errorf("job %q: decoding stored record: %w", name, err)
	}
	return &j, rec.Revision, nil
}
