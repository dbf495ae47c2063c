package sched

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/job/internal/health"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// fakeJobs is a Jobs whose records are {"bmc":...,"done":...} and whose
// one step completes the job.
type fakeJobs struct {
	store storage.Store
	e     *Engine

	mu     sync.Mutex
	copies map[string]Copy          // what each job's step was handed
	done   map[string]chan struct{} // closed at the job's first Signal
}

type fakeRecord struct {
	BMC  string `json:"bmc"`
	Done bool   `json:"done"`
}

func (f *fakeJobs) Head(data []byte) (Head, error) {
	var r fakeRecord
	err := json.Unmarshal(data, &r)
	return Head{BMC: r.BMC, Completed: r.Done}, err
}

func (f *fakeJobs) Endpoint(bmcURL string) (bmc.Endpoint, error) { return bmc.ParseEndpoint(bmcURL) }

func (f *fakeJobs) Step(ctx context.Context, job, sys string, c Copy) Outcome {
	f.mu.Lock()
	f.copies[job] = c
	f.mu.Unlock()
	key := f.e.cfg.KeyPrefix + "jobs/" + job
	rec, err := f.store.Get(ctx, key)
	if err != nil {
		return Outcome{Err: err}
	}
	var r fakeRecord
	if err := json.Unmarshal(rec.Value, &r); err != nil {
		return Outcome{Err: err}
	}
	r.Done = true
	data, _ := json.Marshal(r)
	rev, err := f.store.Update(ctx, key, data, rec.Revision)
	if err != nil {
		return Outcome{Err: err}
	}
	f.e.Wrote(job, rev)
	return Outcome{Copy: Copy{Job: r, Rev: rev}, Done: true}
}

func (f *fakeJobs) CompleteWithoutBMC(context.Context, string) {}

func (f *fakeJobs) Signal(job string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch := f.doneCh(job); ch != nil {
		close(ch)
		f.done[job] = nil
	}
}

// doneCh is job's channel, made at first use; nil once closed. f.mu held.
func (f *fakeJobs) doneCh(job string) chan struct{} {
	ch, ok := f.done[job]
	if !ok {
		ch = make(chan struct{})
		f.done[job] = ch
	}
	return ch
}

func (f *fakeJobs) wait(t *testing.T, job string) {
	f.mu.Lock()
	ch := f.doneCh(job)
	f.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("job %s not completed", job)
	}
}

func (f *fakeJobs) Release(context.Context, string, string) error { return nil }
func (f *fakeJobs) Close(context.Context) error                   { return nil }

// newEngine returns an engine over a memstore and fakeJobs, not running.
func newEngine(scan time.Duration) (*Engine, *fakeJobs) {
	f := &fakeJobs{store: newStore(), copies: map[string]Copy{}, done: map[string]chan struct{}{}}
	cfg := engineConfig(f, f.store)
	cfg.ScanInterval = scan
	f.e = New(cfg)
	return f.e, f
}

func newStore() storage.Store { return memstore.New() }

// engineConfig is the tests' engine configuration over jobs and store.
func engineConfig(jobs Jobs, store storage.Store) Config {
	return Config{Jobs: jobs, Store: store, KeyPrefix: "t/", Owner: "o", LeaseDuration: 30 * time.Second,
		ScanInterval: time.Hour, Workers: 4, EndpointConcurrency: 4, Clock: clock.Real{}, Log: logr.Discard(),
		Health: new(health.State)}
}

// run runs e until the test ends.
func run(t *testing.T, e *Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func create(t *testing.T, f *fakeJobs, job string) int64 {
	return createOn(t, f, job, "redfish://10.7.0.1/redfish/v1/Systems/1")
}

func createOn(t *testing.T, f *fakeJobs, job, bmcURL string) int64 {
	data, _ := json.Marshal(fakeRecord{BMC: bmcURL})
	rev, err := f.store.Create(context.Background(), "t/jobs/"+job, data)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// A job's first step starts from the copy kept at its create (Created),
// when the scan reads the create after it.
func TestFreshCopyTaken(t *testing.T) {
	e, f := newEngine(time.Hour)
	rev := create(t, f, "j")
	e.Created("j", Copy{Job: "as created", Rev: rev})
	run(t, e)
	f.wait(t, "j")
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.copies["j"]; c.Job != "as created" || c.Rev != rev {
		t.Errorf("first step handed %+v, want the copy at revision %d", c, rev)
	}
}

// A job that ran to completion before its Submit returned leaves no copy
// behind: Submit keeps one (Created) only while the scan has not read the
// job's create (freshjobs.go); kept after, nothing would ever take or forget
// it. (The Runner's Submit stores the job, then keeps the copy: here the job
// is stored, and run to completion, before Created.)
func TestFreshCopyNotKeptOnceScanned(t *testing.T) {
	e, f := newEngine(2 * time.Millisecond)
	run(t, e)
	rev := create(t, f, "j")
	f.wait(t, "j")
	e.Created("j", Copy{Job: "as created", Rev: rev})
	e.fresh.mu.Lock()
	n := len(e.fresh.jobs)
	e.fresh.mu.Unlock()
	if n != 0 {
		t.Errorf("%d copies kept for jobs that already ran", n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.copies["j"]; c != (Copy{}) {
		t.Errorf("step of a job created without a copy handed %+v", c)
	}
}

var _ Jobs = (*fakeJobs)(nil)
