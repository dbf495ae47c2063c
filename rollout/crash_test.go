package rollout_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// countingStore counts the creates of job records, and can fail the first
// create of each (as a process that died between a pass's write and the
// job's create would leave it).
type countingStore struct {
	storage.Store
	failFirst bool

	mu      sync.Mutex
	created map[string]int // job key -> successful creates
	failed  map[string]bool
}

func (s *countingStore) Create(ctx context.Context, key string, v []byte) (int64, error) {
	if !strings.Contains(key, "/jobs/") {
		return s.Store.Create(ctx, key, v)
	}
	s.mu.Lock()
	if s.failFirst && !s.failed[key] {
		s.failed[key] = true
		s.mu.Unlock()
		return 0, errors.New("store unavailable (injected)")
	}
	s.mu.Unlock()
	rev, err := s.Store.Create(ctx, key, v)
	if err == nil {
		s.mu.Lock()
		s.created[key]++
		s.mu.Unlock()
	}
	return rev, err
}

func newCountingStore(failFirst bool) *countingStore {
	return &countingStore{Store: memstore.New(), failFirst: failFirst, created: map[string]int{}, failed: map[string]bool{}}
}

// A pass wrote "running" but its job's create failed (the process could
// have died there): the next pass finds the job missing and creates it,
// once.
func TestJobMissingAfterTheWriteIsCreatedOnce(t *testing.T) {
	cs := newCountingStore(true)
	f := newFleet(t, fleetOpts{servers: 12, store: cs})
	f.create("bios", rollout.Policy{MaxUnavailable: rollout.Count(3)})
	r := f.wait("bios")
	if r.Status.Result != rollout.ResultSucceeded {
		t.Fatalf("%s %s", r.Status.Result, r.Status.Message)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.failed) != 12 || len(cs.created) != 12 {
		t.Fatalf("%d creates failed, %d jobs created; want 12 and 12", len(cs.failed), len(cs.created))
	}
	for k, n := range cs.created {
		if n != 1 {
			t.Errorf("%s created %d times", k, n)
		}
	}
	for i, b := range f.bmcs {
		if n := len(b.CallsTo(fake.MethodStartFirmwareUpdate)); n != 1 {
			t.Errorf("server %d: %d update starts", i, n)
		}
	}
	if got := maxOverlap(f.wire(), nil); got > 3 {
		t.Errorf("%d servers unavailable at once, limit 3", got)
	}
}

// Two replicas (a Runner and a Controller each) on one Store: each job is
// created once, each server updated once, and the limits hold on the wire.
func TestTwoReplicasAgree(t *testing.T) {
	cs := newCountingStore(false)
	f := newFleet(t, fleetOpts{servers: 60, endpoints: 3, racks: 6, store: cs, updateTime: 10 * time.Millisecond})
	r2, err := job.NewRunner(job.Config{
		StepperConfig: job.StepperConfig{Dialer: f.fake, Credentials: bmc.StaticCredentials{"lab": {Username: "u", Password: "p"}},
			PollInterval: 5 * time.Millisecond, SlowPollInterval: 5 * time.Millisecond},
		Store: cs, ScanInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctl2 := f.controller(r2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = r2.Start(ctx) }()
	go func() { defer wg.Done(); _ = ctl2.Start(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	f.create("bios", rollout.Policy{
		MaxUnavailable:         rollout.Count(6),
		MaxUnavailablePerGroup: []rollout.GroupLimit{{Label: "rack", Max: rollout.Count(1)}},
		Canary:                 2,
	})
	r := f.wait("bios")
	if r.Status.Result != rollout.ResultSucceeded || r.Status.Counts.Succeeded != 60 {
		t.Fatalf("%s %s %+v", r.Status.Result, r.Status.Message, r.Status.Counts)
	}
	cs.mu.Lock()
	if len(cs.created) != 60 {
		t.Errorf("%d jobs created, want 60", len(cs.created))
	}
	for k, n := range cs.created {
		if n != 1 {
			t.Errorf("%s created %d times", k, n)
		}
	}
	cs.mu.Unlock()
	ws := f.wire()
	if got := maxOverlap(ws, nil); got > 6 {
		t.Errorf("%d servers unavailable at once, limit 6", got)
	}
	for rack := 0; rack < 6; rack++ {
		if got := maxOverlap(ws, func(i int) bool { return i%6 == rack }); got > 1 {
			t.Errorf("rack %d: %d at once, limit 1", rack, got)
		}
	}
	// Both replicas wrote passes: the events of one rollout came from two
	// processes, and no server transition was reported twice.
	seen := map[string]int{}
	for _, e := range f.eventsOf("bios") {
		if e.Kind == rollout.EventServer {
			seen[e.Server+":"+e.To.String()]++
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("transition %s reported %d times", k, n)
		}
	}
}

// A rollout created again under the name of a deleted one whose jobs are
// still stored is refused: their completions would be taken for its own.
func TestCreateRefusesLeftoverJobs(t *testing.T) {
	f := newFleet(t, fleetOpts{servers: 3})
	f.create("bios", rollout.Policy{MaxUnavailable: rollout.Count(3)})
	f.wait("bios")
	ctx := context.Background()
	if err := f.ctl.Delete(ctx, "bios"); err != nil {
		t.Fatal(err)
	}
	_, err := f.ctl.Create(ctx, "bios", rollout.Spec{Template: firmwareTemplate(), Servers: f.servers})
	if !errors.Is(err, storage.ErrExists) || !strings.Contains(err.Error(), "bios.0.node-000") {
		t.Fatalf("create over leftover jobs: %v", err)
	}
	for i := range f.servers {
		if err := f.runner.Delete(ctx, rollout.JobName("bios", i, f.servers[i].Name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.ctl.Create(ctx, "bios", rollout.Spec{Template: firmwareTemplate(), Servers: f.servers}); err != nil {
		t.Fatalf("create after the jobs were deleted: %v", err)
	}
	if r := f.wait("bios"); r.Status.Result != rollout.ResultSucceeded {
		t.Fatalf("%s %s", r.Status.Result, r.Status.Message)
	}
}

// A template the Runner refuses (a custom kind it does not know: the spec's
// own validation checks only its shape) fails each server it starts with
// InvalidSpec, and the failure budget halts the rollout; nothing reaches a
// BMC.
func TestRunnerRefusingTheTemplateFailsTheServer(t *testing.T) {
	f := newFleet(t, fleetOpts{servers: 6})
	_, err := f.ctl.Create(context.Background(), "custom", rollout.Spec{
		Template: job.Spec{CredentialsRef: "lab", Tasks: []task.Spec{{Custom: &task.CustomAction{Kind: "example.com/unknown"}}}},
		Servers:  f.servers,
		Policy:   rollout.Policy{MaxUnavailable: rollout.Count(2), FailureBudget: rollout.Count(1), NoSkipCheck: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := f.wait("custom")
	st := r.Status
	if st.Result != rollout.ResultHalted || st.Counts.Failed < 2 || st.Counts.Pending == 0 {
		t.Fatalf("%s %s %+v", st.Result, st.Message, st.Counts)
	}
	for _, fl := range st.Failures {
		if fl.Reason != conditions.ReasonInvalidSpec || !strings.Contains(fl.Message, "example.com/unknown") {
			t.Errorf("failure %+v: want InvalidSpec naming the kind", fl)
		}
	}
	for i, b := range f.bmcs {
		for _, c := range b.Calls() {
			if c.Method != fake.MethodDial && c.Method != fake.MethodClose {
				t.Errorf("server %d got %s", i, c.Method)
			}
		}
	}
}
