package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
)

// Config configures a Controller. Runner and Store are required.
type Config struct {
	// Runner runs the servers' jobs (and answers the skip check).
	Runner *job.Runner
	// Store is the Runner's Store: rollouts live beside its jobs.
	Store storage.Store
	// KeyPrefix is the Runner's KeyPrefix (default "bmckit/").
	KeyPrefix string
	// Approve is the per-server approval gate: false holds the server back
	// (asked again on every pass). An error holds it too, and is logged.
	// Nil approves every server.
	Approve func(ctx context.Context, rollout string, s Server) (bool, error)
	// Observer receives every transition this process writes.
	Observer Observer
	// PollInterval is how often every rollout is looked at for what other
	// replicas did (completions in this process wake a pass at once).
	// Defaults to 1s.
	PollInterval time.Duration
	// CheckConcurrency bounds the skip checks (job.Runner.InState) a pass
	// runs at once. Defaults to 64.
	CheckConcurrency int
	Logger           logr.Logger
	Clock            clock.Clock
}

// Controller creates rollouts and carries them out over a job.Runner. Run
// one per replica (Start), beside the Runner: every replica makes passes,
// and the compare-and-swap of each pass's write makes them agree
// (docs/rollouts.md).
type Controller struct {
	cfg Config
	log logr.Logger

	wake chan struct{}

	mu      sync.Mutex
	specs   map[string]*compiled // immutable once created
	waiting map[string]bool      // job names with a Wait goroutine
	done    map[string]*Outcome  // job name -> its completion, as Wait returned it
	missing map[string]bool      // job names Wait did not find
	refused map[string]*Outcome  // job names Submit refused for good
	notify  chan struct{}        // closed (and replaced) after each write
}

type compiled struct {
	spec   *Spec
	groups *groups
}

// New returns a Controller.
func New(cfg Config) (*Controller, error) {
	if cfg.Runner == nil || cfg.Store == nil {
		return nil, errors.New("rollout: Config.Runner and Config.Store are required")
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "bmckit/"
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.CheckConcurrency <= 0 {
		cfg.CheckConcurrency = 64
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	log := cfg.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	return &Controller{
		cfg: cfg, log: log.WithName("rollout"),
		wake:    make(chan struct{}, 1),
		specs:   map[string]*compiled{},
		waiting: map[string]bool{},
		done:    map[string]*Outcome{},
		missing: map[string]bool{},
		refused: map[string]*Outcome{},
		notify:  make(chan struct{}),
	}, nil
}

func (c *Controller) stateKey(name string) string { return c.cfg.KeyPrefix + "rollouts/" + name }
func (c *Controller) specKey(name string) string  { return c.cfg.KeyPrefix + "rolloutspecs/" + name }

// Create stores a new rollout; the passes of every replica's Start carry it
// out. It returns an error wrapping storage.ErrExists if the name is taken,
// ErrInvalidSpec (naming the field) if the spec is invalid.
func (c *Controller) Create(ctx context.Context, name string, spec Spec) (*Rollout, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("rollout %q: %w", name, err)
	}
	// Jobs of an earlier rollout of this name would be taken for this
	// one's (their names are fixed by the index): refuse.
	left, err := c.cfg.Store.List(ctx, c.cfg.KeyPrefix+"jobs/"+name+".")
	if err != nil {
		return nil, fmt.Errorf("rollout %q: %w", name, err)
	}
	if _, serr := c.cfg.Store.Get(ctx, c.specKey(name)); len(left) > 0 && errors.Is(serr, storage.ErrNotFound) {
		return nil, fmt.Errorf("rollout %q: %d jobs of an earlier rollout of this name exist (%s): delete them (Runner.Delete) or choose another name: %w",
			name, len(left), strings.TrimPrefix(left[0].Key, c.cfg.KeyPrefix+"jobs/"), storage.ErrExists)
	}
	sb, err := json.Marshal(specRecord{Name: name, Spec: spec})
	if err != nil {
		return nil, err
	}
	if _, err := c.cfg.Store.Create(ctx, c.specKey(name), sb); err != nil {
		if !errors.Is(err, storage.ErrExists) {
			return nil, fmt.Errorf("rollout %q: storing its spec: %w", name, err)
		}
		// A Create that died between its two writes left the spec: the
		// same spec again goes on; another is refused.
		rec, gerr := c.cfg.Store.Get(ctx, c.specKey(name))
		if gerr != nil || !bytes.Equal(rec.Value, sb) {
			return nil, fmt.Errorf("rollout %q: %w", name, storage.ErrExists)
		}
	}
	now := c.cfg.Clock.Now().UTC()
	p := &plan{spec: &spec, name: name, st: &Status{}, now: now}
	p.init()
	p.judge()
	st := stateRecord{Name: name, CreatedAt: now, Status: *p.st}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	if _, err := c.cfg.Store.Create(ctx, c.stateKey(name), b); err != nil {
		return nil, fmt.Errorf("rollout %q: %w", name, err)
	}
	emit(c.log, c.cfg.Observer, p.events)
	c.poke()
	return &Rollout{Name: name, CreatedAt: now, Spec: spec, Status: st.Status}, nil
}

// Get returns a rollout (storage.ErrNotFound if there is none).
func (c *Controller) Get(ctx context.Context, name string) (*Rollout, error) {
	st, _, err := c.loadState(ctx, name)
	if err != nil {
		return nil, err
	}
	cs, err := c.compiled(ctx, name)
	if err != nil {
		return nil, err
	}
	return &Rollout{Name: name, CreatedAt: st.CreatedAt, Spec: *cs.spec, Control: st.Control, Status: st.Status}, nil
}

// List returns every rollout's name and status (without its spec's
// servers, which Get returns).
func (c *Controller) List(ctx context.Context) ([]*Rollout, error) {
	recs, err := c.cfg.Store.List(ctx, c.cfg.KeyPrefix+"rollouts/")
	if err != nil {
		return nil, err
	}
	out := make([]*Rollout, 0, len(recs))
	for _, rec := range recs {
		st, err := decodeState(rec.Key, rec.Value)
		if err != nil {
			c.log.Error(err, "skipping undecodable rollout record", "key", rec.Key)
			continue
		}
		out = append(out, &Rollout{Name: st.Name, CreatedAt: st.CreatedAt, Control: st.Control, Status: st.Status})
	}
	return out, nil
}

// Pause stops new servers from starting (running jobs finish); Resume
// undoes it. Abort ends the rollout: nothing starts any more, running jobs
// finish, then it completes with result Aborted. ApproveCanary lets a
// rollout with Policy.CanaryApproval go on after its canary. Each is one
// compare-and-swap, safe at any moment and from any replica.
func (c *Controller) Pause(ctx context.Context, name string) error {
	return c.control(ctx, name, func(k *Control) { k.Paused = true })
}

// Resume undoes Pause.
func (c *Controller) Resume(ctx context.Context, name string) error {
	return c.control(ctx, name, func(k *Control) { k.Paused = false })
}

// Abort ends the rollout (see Pause).
func (c *Controller) Abort(ctx context.Context, name string) error {
	return c.control(ctx, name, func(k *Control) { k.Aborted = true })
}

// ApproveCanary lets the rollout go on after its canary (see Pause).
func (c *Controller) ApproveCanary(ctx context.Context, name string) error {
	return c.control(ctx, name, func(k *Control) { k.CanaryApproved = true })
}

func (c *Controller) control(ctx context.Context, name string, f func(*Control)) error {
	_, err := storage.Modify(ctx, c.cfg.Store, c.stateKey(name), func(cur *storage.Record) ([]byte, error) {
		if cur == nil {
			return nil, fmt.Errorf("rollout %q: %w", name, storage.ErrNotFound)
		}
		st, err := decodeState(cur.Key, cur.Value)
		if err != nil {
			return nil, err
		}
		f(&st.Control)
		return json.Marshal(st)
	})
	c.poke()
	return err
}

// Delete removes a rollout's records (its jobs stay: Runner.Delete them).
// A rollout deleted while it runs starts no more servers.
func (c *Controller) Delete(ctx context.Context, name string) error {
	if err := c.cfg.Store.Delete(ctx, c.stateKey(name), 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	if err := c.cfg.Store.Delete(ctx, c.specKey(name), 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	c.mu.Lock()
	delete(c.specs, name)
	c.mu.Unlock()
	return nil
}

// Wait blocks until the rollout completed (or ctx ends) and returns it.
func (c *Controller) Wait(ctx context.Context, name string) (*Rollout, error) {
	return c.WaitFor(ctx, name, func(r *Rollout) bool { return r.Status.Completed() })
}

// WaitFor blocks until cond holds of the rollout (or ctx ends) and returns
// it: it reads the rollout after every write of this Controller and every
// PollInterval (for other replicas' writes).
func (c *Controller) WaitFor(ctx context.Context, name string, cond func(*Rollout) bool) (*Rollout, error) {
	for {
		c.mu.Lock()
		ch := c.notify
		c.mu.Unlock()
		r, err := c.Get(ctx, name)
		if err != nil || cond(r) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-ch:
		case <-c.cfg.Clock.After(c.cfg.PollInterval):
		}
	}
}

// Start makes passes over every rollout until ctx ends: on a completion of
// one of their jobs in this process, on a change made through this
// Controller, and every PollInterval. It fits controller-runtime's
// manager.Runnable.
func (c *Controller) Start(ctx context.Context) error {
	for {
		c.passAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-c.wake:
		case <-c.cfg.Clock.After(c.cfg.PollInterval):
		}
	}
}

// NeedLeaderElection is false: every replica may make passes.
func (c *Controller) NeedLeaderElection() bool { return false }

func (c *Controller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Controller) passAll(ctx context.Context) {
	recs, err := c.cfg.Store.List(ctx, c.cfg.KeyPrefix+"rollouts/")
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error(err, "listing rollouts")
		}
		return
	}
	for _, rec := range recs {
		name := strings.TrimPrefix(rec.Key, c.cfg.KeyPrefix+"rollouts/")
		if st, err := decodeState(rec.Key, rec.Value); err == nil && st.Status.Completed() {
			continue // completed rollouts never change again
		}
		if err := c.Pass(ctx, name); err != nil && ctx.Err() == nil {
			c.log.Error(err, "rollout pass", "rollout", name)
		}
	}
}

func (c *Controller) loadState(ctx context.Context, name string) (*stateRecord, int64, error) {
	rec, err := c.cfg.Store.Get(ctx, c.stateKey(name))
	if err != nil {
		return nil, 0, fmt.Errorf("rollout %q: %w", name, err)
	}
	st, err := decodeState(rec.Key, rec.Value)
	return st, rec.Revision, err
}

func (c *Controller) compiled(ctx context.Context, name string) (*compiled, error) {
	c.mu.Lock()
	cs := c.specs[name]
	c.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	rec, err := c.cfg.Store.Get(ctx, c.specKey(name))
	if err != nil {
		return nil, fmt.Errorf("rollout %q: its spec: %w", name, err)
	}
	sr, err := decodeSpec(rec.Key, rec.Value)
	if err != nil {
		return nil, err
	}
	cs = &compiled{spec: &sr.Spec, groups: newGroups(&sr.Spec)}
	c.mu.Lock()
	c.specs[name] = cs
	c.mu.Unlock()
	return cs, nil
}

// maxPassTries bounds a pass's retries after conflicting writes (another
// replica's pass or a control change): the next poll tries again.
const maxPassTries = 8

// Pass makes one pass over a rollout (Start makes them; tests and hosts
// that drive a rollout step by step call it directly): it records the
// completions observed, decides, and writes by compare-and-swap, then
// creates the jobs of the servers it started.
func (c *Controller) Pass(ctx context.Context, name string) error {
	cs, err := c.compiled(ctx, name)
	if err != nil {
		return err
	}
	checked := map[int]bool{} // skip-check verdicts, reused by a retried pass
	for try := 0; try < maxPassTries; try++ {
		rec, rev, err := c.loadState(ctx, name)
		if err != nil {
			return err
		}
		if rec.Status.Completed() {
			return nil
		}
		before, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		outs, missing := c.observe(name, cs.spec, &rec.Status)
		started, events := Decide(ctx, Decision{
			Name: name, Spec: cs.spec, Control: rec.Control, Now: c.cfg.Clock.Now().UTC(),
			Outcomes: outs, Approve: c.approver(ctx, name, cs.spec), InState: c.skipCheck(cs.spec, checked),
			CheckConcurrency: c.cfg.CheckConcurrency, groups: cs.groups,
		}, &rec.Status)
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, before) {
			if _, err := c.cfg.Store.Update(ctx, c.stateKey(name), b, rev); err != nil {
				if errors.Is(err, storage.ErrConflict) {
					continue
				}
				return fmt.Errorf("rollout %q: writing a pass: %w", name, err)
			}
			emit(c.log, c.cfg.Observer, events)
			c.forget(name, cs.spec, outs)
			c.wrote()
		}
		c.submit(ctx, name, cs.spec, append(missing, started...))
		c.follow(ctx, name, cs.spec, &rec.Status)
		return nil
	}
	c.poke() // lost every race: go again soon
	return nil
}

// observe returns the completions of p's running servers that this
// process learnt (their Waits returned), and the running servers whose job
// does not exist (created by no one yet: a crash between a pass's write
// and the create).
func (c *Controller) observe(name string, spec *Spec, st *Status) (outs []Outcome, missing []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; i < len(st.States); i++ {
		if State(st.States[i]) != StateRunning {
			continue
		}
		jn := JobName(name, i, spec.Servers[i].Name)
		if o := c.done[jn]; o != nil {
			outs = append(outs, *o)
		} else if o := c.refused[jn]; o != nil {
			outs = append(outs, *o)
		} else if c.missing[jn] {
			delete(c.missing, jn)
			missing = append(missing, i)
		}
	}
	return outs, missing
}

// forget drops the completions a written pass recorded.
func (c *Controller) forget(name string, spec *Spec, outs []Outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range outs {
		delete(c.done, o.Job)
		delete(c.refused, o.Job)
	}
}

func (c *Controller) wrote() {
	c.mu.Lock()
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
}

// approver is the approval gate for p.pick (nil: none).
func (c *Controller) approver(ctx context.Context, name string, spec *Spec) func(int) bool {
	if c.cfg.Approve == nil {
		return nil
	}
	return func(i int) bool {
		ok, err := c.cfg.Approve(ctx, name, spec.Servers[i])
		if err != nil {
			c.log.Error(err, "approval gate failed; holding the server", "rollout", name, "server", spec.Servers[i].Name)
			return false
		}
		return ok
	}
}

// skipCheck is Decision.InState over the Runner (Runner.InState): an error
// is "not known to be in state", and the server runs its job. Verdicts are
// kept in checked, so a pass retried after a conflict asks no BMC twice.
func (c *Controller) skipCheck(spec *Spec, checked map[int]bool) func(context.Context, int) bool {
	if spec.Policy.NoSkipCheck {
		return nil
	}
	var mu sync.Mutex
	return func(ctx context.Context, i int) bool {
		mu.Lock()
		v, ok := checked[i]
		mu.Unlock()
		if ok {
			return v
		}
		in, why, err := c.cfg.Runner.InState(ctx, spec.JobSpec(i))
		if err != nil {
			c.log.V(1).Info("skip check failed; the server runs its job", "server", spec.Servers[i].Name, "error", err.Error())
			in = false
		} else if in {
			c.log.V(1).Info("already in state; skipped", "server", spec.Servers[i].Name, "why", why)
		}
		mu.Lock()
		checked[i] = in
		mu.Unlock()
		return in
	}
}

// submit creates the jobs of the given servers (started by a written pass,
// or found running without a job). A job that exists already was created
// by another replica (or an earlier try): the name is fixed by the index,
// so it is never created twice. The creates run concurrently (at most
// maxConcurrentSubmits at once): a durable store commits concurrent writes
// together (one fsync for a group), where one after another each would
// wait for its own, and the pass, which holds up the next one, waits for
// them all.
func (c *Controller) submit(ctx context.Context, name string, spec *Spec, idx []int) {
	if len(idx) == 1 {
		c.submitOne(ctx, name, spec, idx[0])
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxConcurrentSubmits)
	for _, i := range idx {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c.submitOne(ctx, name, spec, i)
		}()
	}
	wg.Wait()
}

// maxConcurrentSubmits bounds the job creates one pass runs at once.
const maxConcurrentSubmits = 64

func (c *Controller) submitOne(ctx context.Context, name string, spec *Spec, i int) {
	jn := JobName(name, i, spec.Servers[i].Name)
	_, err := c.cfg.Runner.Submit(ctx, jn, spec.JobSpec(i))
	switch {
	case err == nil, errors.Is(err, storage.ErrExists):
	case errors.Is(err, job.ErrInvalidSpec):
		// The Runner's own validation (custom kinds' params) refused
		// it: the server failed; the next pass records it.
		c.mu.Lock()
		c.refused[jn] = &Outcome{Index: i, Job: jn, Result: conditions.ResultFailed, Reason: conditions.ReasonInvalidSpec, Message: err.Error(), Completed: c.cfg.Clock.Now().UTC()}
		c.mu.Unlock()
		c.poke()
	default:
		// The next pass finds it missing again and retries.
		c.log.Error(err, "creating a server's job; retried on the next pass", "job", jn)
		c.mu.Lock()
		delete(c.waiting, jn)
		c.mu.Unlock()
	}
}

// follow waits, one goroutine per running server, for its job to complete,
// and wakes a pass when it does.
func (c *Controller) follow(ctx context.Context, name string, spec *Spec, st *Status) {
	for i := 0; i < len(st.States); i++ {
		if State(st.States[i]) != StateRunning {
			continue
		}
		jn := JobName(name, i, spec.Servers[i].Name)
		c.mu.Lock()
		if c.waiting[jn] || c.done[jn] != nil || c.refused[jn] != nil {
			c.mu.Unlock()
			continue
		}
		c.waiting[jn] = true
		c.mu.Unlock()
		go c.await(ctx, jn, i)
	}
}

func (c *Controller) await(ctx context.Context, jn string, i int) {
	j, err := c.cfg.Runner.Wait(ctx, jn)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, jn)
	switch {
	case err == nil && j.Completed():
		o := &Outcome{Index: i, Job: jn, Result: j.Status.Result, Reason: j.Status.Reason, Message: j.Status.Message}
		if j.Status.CompletionTime != nil {
			o.Completed = j.Status.CompletionTime.Time
		}
		c.done[jn] = o
	case errors.Is(err, storage.ErrNotFound):
		c.missing[jn] = true
	default:
		return // ctx ended, or a store error: the next pass follows it again
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
