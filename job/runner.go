package job

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/internal/backoff"
	"github.com/bmckit/bmckit/storage"
)

// Config configures a Runner. The zero value of every field but Store and
// Dialer means its default.
type Config struct {
	// Store holds jobs and BMC locks. Required.
	Store storage.Store
	// Dialer opens BMC connections. Required.
	Dialer bmc.Dialer
	// Credentials resolves each job's CredentialsRef; see StepperConfig.
	Credentials CredentialsResolver
	// Boot tracks boots for wait-for-boot tasks; see StepperConfig.
	Boot BootTracker
	// Workers bounds how many jobs run at once. Defaults to 16.
	Workers int
	// Owner names this runner in BMC locks. Defaults to host-pid-random.
	Owner string
	// LeaseDuration is how long a BMC lock lasts without renewal; a dead
	// runner's jobs are resumed by another runner after it. Defaults to 30s.
	LeaseDuration time.Duration
	// ScanInterval is how often the Store is scanned for new jobs and for
	// changes made by other replicas. Defaults to 1s. Jobs submitted through
	// this Runner are picked up at once.
	ScanInterval time.Duration
	// KeyPrefix is prepended to every key the runner writes. Defaults to
	// "bmckit/".
	KeyPrefix string
	// Clock defaults to the wall clock.
	Clock Clock
	// Logger defaults to logr.Discard().
	Logger logr.Logger
	// OnUpdate, if set, is called after every write of a job by this runner
	// (intent, result, completion) with a copy of the job, from the worker
	// running it. It must not block; use it for progress output or metrics.
	OnUpdate func(j Job)
	// DefaultTaskTimeout, PollInterval and Retry: see StepperConfig.
	DefaultTaskTimeout time.Duration
	PollInterval       time.Duration
	Retry              backoff.Policy
}

// Runner runs jobs kept in a Store with a bounded pool of workers. It never
// runs two jobs on the same BMC at once (a lock record per BMC, written by
// compare-and-swap, so this holds across runners sharing a Store), opens one
// BMC connection per job, and resumes jobs left unfinished by a stopped or
// crashed runner without re-running finished tasks.
//
// Start blocks and fits controller-runtime's manager.Runnable.
type Runner struct {
	cfg     Config
	stepper *Stepper
	log     logr.Logger

	wake chan struct{}

	mu      sync.Mutex
	active  map[string]bool // job names running here
	busy    map[string]bool // BMC keys running here
	changed chan struct{}   // closed and replaced on every local write
	started bool

	// Used only by the scanning goroutine.
	follower *storage.Follower
	pending  map[string]*jobHead // unfinished jobs by name

	abandonOnStop bool // tests: simulate a crash (locks not released)
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
		cfg.Workers = 16
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.ScanInterval <= 0 {
		cfg.ScanInterval = time.Second
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "bmckit/"
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	st, err := NewStepper(StepperConfig{
		Dialer: cfg.Dialer, Credentials: cfg.Credentials, Boot: cfg.Boot, Clock: cfg.Clock, Logger: cfg.Logger,
		DefaultTaskTimeout: cfg.DefaultTaskTimeout, PollInterval: cfg.PollInterval, Retry: cfg.Retry,
	})
	if err != nil {
		return nil, err
	}
	return &Runner{
		cfg: cfg, stepper: st, log: cfg.Logger,
		follower: storage.NewFollower(cfg.Store, cfg.KeyPrefix+"jobs/"), pending: map[string]*jobHead{},
		wake: make(chan struct{}, 1), active: map[string]bool{}, busy: map[string]bool{}, changed: make(chan struct{}),
	}, nil
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,198}[a-zA-Z0-9])?$`)

func (r *Runner) jobKey(name string) string { return r.cfg.KeyPrefix + "jobs/" + name }
func (r *Runner) lockKey(ep bmc.Endpoint) string {
	return r.cfg.KeyPrefix + "locks/" + url.PathEscape(ep.Key())
}

// Submit validates spec and stores a new job named name. Nothing is stored
// if the spec or name is invalid; an existing job with the name is an error
// wrapping storage.ErrExists.
func (r *Runner) Submit(ctx context.Context, name string, spec Spec) (*Job, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("job: invalid name %q: use 1-200 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", truncate(name, 80))
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("job %q: %w", name, err)
	}
	j := &Job{Name: name, Generation: 1, CreatedAt: r.cfg.Clock.Now().UTC(), Spec: spec}
	data, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	if _, err := r.cfg.Store.Create(ctx, r.jobKey(name), data); err != nil {
		return nil, fmt.Errorf("job %q: storing: %w", name, err)
	}
	r.poke()
	return j, nil
}

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
		if err := json.Unmarshal(rec.Value, &j); err != nil {
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
// next step. Canceling a completed job does nothing.
func (r *Runner) Cancel(ctx context.Context, name string) error {
	for {
		j, rev, err := r.load(ctx, name)
		if err != nil {
			return err
		}
		if j.Completed() || j.CancelRequested {
			return nil
		}
		j.CancelRequested = true
		data, _ := json.Marshal(j)
		if _, err := r.cfg.Store.Update(ctx, r.jobKey(name), data, rev); errors.Is(err, storage.ErrConflict) {
			continue
		} else if err != nil {
			return err
		}
		r.notify()
		return nil
	}
}

// Delete removes a job record. A running job stops at its next write.
func (r *Runner) Delete(ctx context.Context, name string) error {
	return r.cfg.Store.Delete(ctx, r.jobKey(name), 0)
}

// Wait blocks until the job is Completed (or ctx is done) and returns it.
func (r *Runner) Wait(ctx context.Context, name string) (*Job, error) {
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		j, err := r.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		if j.Completed() {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-ch:
		case <-r.cfg.Clock.After(r.cfg.ScanInterval):
		}
	}
}

func (r *Runner) load(ctx context.Context, name string) (*Job, int64, error) {
	rec, err := r.cfg.Store.Get(ctx, r.jobKey(name))
	if err != nil {
		return nil, 0, fmt.Errorf("job %q: %w", name, err)
	}
	var j Job
	if err := json.Unmarshal(rec.Value, &j); err != nil {
		return nil, 0, fmt.Errorf("job %q: decoding stored record: %w", name, err)
	}
	return &j, rec.Revision, nil
}

func (r *Runner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runner) notify() {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Start runs jobs until ctx is done, then waits for in-flight steps to stop
// and releases its BMC locks so another runner can resume at once. It
// returns nil after a clean stop. A Runner can be started once.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("job: Runner already started")
	}
	r.started = true
	r.mu.Unlock()

	sem := make(chan struct{}, r.cfg.Workers)
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		_ = r.stepper.Close(context.WithoutCancel(ctx))
	}()
	for {
		r.scan(ctx, sem, &wg)
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-r.cfg.Clock.After(r.cfg.ScanInterval):
		}
	}
}

// jobHead is the part of a stored job the scheduler needs; decoding only it
// skips most of the record's allocations.
type jobHead struct {
	Name            string    `json:"name"`
	CreatedAt       time.Time `json:"createdAt"`
	CancelRequested bool      `json:"cancelRequested"`
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

// scan claims runnable jobs while workers are free. It keeps an index of
// unfinished jobs fed by a storage.Follower, so a scan costs one change-feed
// read (or one List on stores without a feed) plus decoding only the jobs
// that changed, not every job every time.
func (r *Runner) scan(ctx context.Context, sem chan struct{}, wg *sync.WaitGroup) {
	events, err := r.follower.Next(ctx)
	if err != nil && ctx.Err() == nil {
		r.log.Error(err, "reading job changes failed; will retry")
	}
	if err != nil && len(events) == 0 {
		return
	}
	for _, ev := range events {
		name := ev.Key[len(r.cfg.KeyPrefix+"jobs/"):]
		if ev.Type == storage.EventDelete {
			delete(r.pending, name)
			continue
		}
		var h jobHead
		if err := json.Unmarshal(ev.Value, &h); err != nil {
			r.log.Error(err, "skipping undecodable job record", "key", ev.Key)
			delete(r.pending, name)
			continue
		}
		if h.completed() {
			delete(r.pending, name)
			continue
		}
		h.Name = name
		r.pending[name] = &h
	}
	if len(sem) == cap(sem) || len(r.pending) == 0 {
		return
	}
	jobs := make([]*jobHead, 0, len(r.pending))
	for _, h := range r.pending {
		jobs = append(jobs, h)
	}
	sort.Slice(jobs, func(a, b int) bool {
		if !jobs[a].CreatedAt.Equal(jobs[b].CreatedAt) {
			return jobs[a].CreatedAt.Before(jobs[b].CreatedAt)
		}
		return jobs[a].Name < jobs[b].Name
	})
	for _, j := range jobs {
		if ctx.Err() != nil {
			return
		}
		ep, err := bmc.ParseEndpoint(j.Spec.BMC)
		if err != nil {
			// Invalid specs can only come from outside Submit; a worker
			// records the failure without touching a BMC.
			ep = bmc.Endpoint{Protocol: "invalid", Host: j.Name}
		}
		r.mu.Lock()
		skip := r.active[j.Name] || r.busy[ep.Key()]
		r.mu.Unlock()
		if skip && j.CancelRequested && j.Status.StartTime == nil {
			// Queued behind another job on its BMC and canceled: it needs
			// no BMC, so finish it now instead of after the other job.
			r.cancelQueued(ctx, j.Name)
			continue
		}
		if skip {
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			return // all workers busy
		}
		lockRev, ok, err := r.acquire(ctx, ep, j.Name)
		if err != nil || !ok {
			<-sem
			if err != nil && ctx.Err() == nil {
				r.log.Error(err, "acquiring BMC lock failed", "job", j.Name)
			}
			continue
		}
		r.mu.Lock()
		r.active[j.Name] = true
		r.busy[ep.Key()] = true
		r.mu.Unlock()
		wg.Add(1)
		go func(name string, ep bmc.Endpoint, lockRev int64) {
			defer wg.Done()
			defer func() { <-sem }()
			r.work(ctx, name, ep, lockRev)
			r.mu.Lock()
			delete(r.active, name)
			delete(r.busy, ep.Key())
			r.mu.Unlock()
			r.poke() // the BMC may have more jobs waiting
		}(j.Name, ep, lockRev)
	}
}

// cancelQueued completes a canceled job that never started, without its BMC
// lock: the step takes the cancel path and touches no BMC. A concurrent
// writer makes the compare-and-swap fail and the job is looked at again on a
// later scan.
func (r *Runner) cancelQueued(ctx context.Context, name string) {
	j, rev, err := r.load(ctx, name)
	if err != nil || j.Completed() || !j.CancelRequested || j.Status.StartTime != nil {
		return
	}
	_, err = r.stepper.Step(ctx, j, func(ctx context.Context, j *Job) error {
		data, err := json.Marshal(j)
		if err != nil {
			return err
		}
		if _, err := r.cfg.Store.Update(ctx, r.jobKey(name), data, rev); err != nil {
			return err
		}
		r.notify()
		return nil
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, storage.ErrConflict) {
		r.log.Error(err, "completing a canceled queued job failed; will retry", "job", name)
	}
}

// lock is the record that gives one runner one BMC.
type lock struct {
	Owner   string    `json:"owner"`
	Job     string    `json:"job"`
	Expires time.Time `json:"expires"`
}

// acquire takes the BMC lock for job, or takes over an expired one.
func (r *Runner) acquire(ctx context.Context, ep bmc.Endpoint, job string) (int64, bool, error) {
	key := r.lockKey(ep)
	data, _ := json.Marshal(lock{Owner: r.cfg.Owner, Job: job, Expires: r.cfg.Clock.Now().Add(r.cfg.LeaseDuration)})
	rev, err := r.cfg.Store.Create(ctx, key, data)
	if err == nil {
		return rev, true, nil
	}
	if !errors.Is(err, storage.ErrExists) {
		return 0, false, err
	}
	rec, err := r.cfg.Store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, false, nil // released meanwhile; next scan
	}
	if err != nil {
		return 0, false, err
	}
	var cur lock
	if err := json.Unmarshal(rec.Value, &cur); err != nil || r.cfg.Clock.Now().After(cur.Expires) {
		rev, err := r.cfg.Store.Update(ctx, key, data, rec.Revision)
		if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		r.log.Info("took over expired BMC lock", "bmc", ep.String(), "previousOwner", cur.Owner, "job", job)
		return rev, true, nil
	}
	return 0, false, nil
}

// renew extends the lock held at revision rev and returns the new revision.
// ErrConflict or ErrNotFound mean the lock was lost.
func (r *Runner) renew(ctx context.Context, ep bmc.Endpoint, job string, rev int64) (int64, error) {
	data, _ := json.Marshal(lock{Owner: r.cfg.Owner, Job: job, Expires: r.cfg.Clock.Now().Add(r.cfg.LeaseDuration)})
	return r.cfg.Store.Update(ctx, r.lockKey(ep), data, rev)
}

// leaseKeeper renews a BMC lock every LeaseDuration/3 while its job runs,
// however long a step blocks in a BMC call, and cancels the job when the
// lock is lost to another runner.
type leaseKeeper struct {
	mu   sync.Mutex
	rev  int64
	lost bool
	done chan struct{}
}

func (r *Runner) keepLease(ctx context.Context, cancel context.CancelFunc, ep bmc.Endpoint, job string, rev int64, log logr.Logger) *leaseKeeper {
	k := &leaseKeeper{rev: rev, done: make(chan struct{})}
	lastOK := r.cfg.Clock.Now()
	go func() {
		defer close(k.done)
		lose := func(why string) {
			log.Info("lost the BMC lock; stopping the job here", "why", why)
			k.mu.Lock()
			k.lost = true
			k.mu.Unlock()
			cancel()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.cfg.Clock.After(r.cfg.LeaseDuration / 3):
			}
			k.mu.Lock()
			cur := k.rev
			k.mu.Unlock()
			n, err := r.renew(ctx, ep, job, cur)
			switch {
			case err == nil:
				lastOK = r.cfg.Clock.Now()
				k.mu.Lock()
				k.rev = n
				k.mu.Unlock()
			case ctx.Err() != nil:
				return
			case errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound):
				lose("another runner took the lock over")
				return
			case !r.cfg.Clock.Now().Before(lastOK.Add(r.cfg.LeaseDuration * 2 / 3)):
				// The next try would come after the lease ran out: another
				// runner may take the job over, so stop touching the BMC.
				lose("could not renew the lease before it expired: " + err.Error())
				return
			default:
				log.Error(err, "renewing the BMC lock failed; will retry")
			}
		}
	}()
	return k
}

// stop ends renewal and returns the lock's revision, or false if it was lost.
func (k *leaseKeeper) stop(cancel context.CancelFunc) (int64, bool) {
	cancel()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.rev, !k.lost
}

func (r *Runner) release(ctx context.Context, ep bmc.Endpoint, rev int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.cfg.Store.Delete(ctx, r.lockKey(ep), rev); err != nil && !errors.Is(err, storage.ErrNotFound) {
		r.log.Error(err, "releasing BMC lock failed; it expires after the lease", "bmc", ep.String())
	}
}

// work runs one job until it completes, the lock is lost, or ctx is done.
// The lock is renewed in the background (leaseKeeper), not between steps, so
// a step that blocks in a slow BMC call cannot let the lease lapse.
func (r *Runner) work(ctx context.Context, name string, ep bmc.Endpoint, lockRev int64) {
	log := r.log.WithValues("job", name, "bmc", ep.String())
	parent := ctx
	ctx, cancel := context.WithCancel(parent)
	keeper := r.keepLease(ctx, cancel, ep, name, lockRev, log)
	defer func() {
		rev, held := keeper.stop(cancel)
		if r.abandonOnStop && parent.Err() != nil {
			return // a simulated crash leaves everything as it is
		}
		// Whatever ended the work, this runner is done with the BMC: close
		// the session before another runner may open one.
		_ = r.stepper.pool.Release(parent, ep)
		if held {
			r.release(parent, ep, rev)
		}
	}()
	stepCtx := logr.NewContext(ctx, log)
	// The job as this worker last left it; reused while the stored revision
	// is the one this worker wrote, so a step costs a Get but no decode.
	var cached *Job
	var cachedRev int64
	for {
		rec, err := r.cfg.Store.Get(ctx, r.jobKey(name))
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, storage.ErrNotFound) {
				log.Error(err, "loading job failed")
			}
			return
		}
		j := cached
		if j == nil || rec.Revision != cachedRev {
			j = new(Job)
			if err := json.Unmarshal(rec.Value, j); err != nil {
				log.Error(err, "decoding stored job failed")
				return
			}
		}
		rev := rec.Revision
		if j.Completed() {
			r.notify()
			return
		}
		persist := func(ctx context.Context, j *Job) error {
			data, err := json.Marshal(j)
			if err != nil {
				return err
			}
			n, err := r.cfg.Store.Update(ctx, r.jobKey(name), data, rev)
			if err != nil {
				return fmt.Errorf("persisting job %q: %w", name, err)
			}
			rev = n
			r.notify()
			if r.cfg.OnUpdate != nil {
				var cp Job // a deep copy: the worker keeps mutating j
				if json.Unmarshal(data, &cp) == nil {
					r.cfg.OnUpdate(cp)
				}
			}
			return nil
		}
		res, err := r.stepper.Step(stepCtx, j, persist)
		cached, cachedRev = nil, 0
		if err == nil {
			cached, cachedRev = j, rev
		}
		if ctx.Err() != nil {
			return
		}
		wait := res.RequeueAfter
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return // deleted
			}
			if !errors.Is(err, storage.ErrConflict) {
				log.Error(err, "step failed; will retry")
				wait = r.cfg.ScanInterval
			}
			// On conflict the job changed under us (cancel, spec edit):
			// reload at once.
		}
		if res.Done {
			return
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-r.cfg.Clock.After(wait):
			}
		}
	}
}
