package sched

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// lockCounter is a Store that counts the system locks created.
type lockCounter struct {
	storage.Store
	creates atomic.Int64
}

func (s *lockCounter) Create(ctx context.Context, key string, value []byte) (int64, error) {
	rev, err := s.Store.Create(ctx, key, value)
	if err == nil && strings.HasPrefix(key, syslock.KeyPrefix) {
		s.creates.Add(1)
	}
	return rev, err
}

// gatedJobs is fakeJobs whose steps wait for the test: each step reports
// the locks created when it began, then waits for its turn.
type gatedJobs struct {
	*fakeJobs
	locks   *lockCounter
	started chan int64 // locks created so far, at each step's start
	turn    chan struct{}
}

func (g *gatedJobs) Step(ctx context.Context, job, sys string, c Copy) Outcome {
	g.started <- g.locks.creates.Load()
	<-g.turn
	return g.fakeJobs.Step(ctx, job, sys, c)
}

// A runner claims no more systems than its workers can start: with 6 jobs
// queued on 6 systems and 2 workers, the first claim takes 2 locks, not 6
// (the others would wait for a worker holding locks renewed for nothing),
// and every job still runs.
func TestClaimsOnlyWhatWorkersCanStart(t *testing.T) {
	const n = 6
	f := &fakeJobs{copies: map[string]Copy{}, done: map[string]chan struct{}{}}
	lc := &lockCounter{Store: newStore()}
	f.store = lc
	g := &gatedJobs{fakeJobs: f, locks: lc, started: make(chan int64, n), turn: make(chan struct{})}
	cfg := engineConfig(g, lc)
	cfg.Workers = 2
	f.e = New(cfg)
	for i := range n {
		createOn(t, f, fmt.Sprint("j", i), fmt.Sprintf("redfish://10.7.0.%d/redfish/v1/Systems/1", i+1))
	}
	run(t, f.e)
	var open sync.Once
	letGo := func() { open.Do(func() { close(g.turn) }) }
	t.Cleanup(letGo) // runs before run's cleanup, which waits for the steps
	if got := <-g.started; got > 2 {
		t.Fatalf("%d system locks taken before the first step began; want at most 2 (the workers)", got)
	}
	letGo()
	for i := range n {
		f.wait(t, fmt.Sprint("j", i))
	}
}

// A renewal round renews the locks written at least LeaseDuration/12 ago;
// fresher ones wait for the next round, which comes LeaseDuration/3 later.
func TestRenewalSkipsFreshLocks(t *testing.T) {
	e, _ := newEngine(time.Hour)
	lease := e.cfg.LeaseDuration
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	l := &loop{e: e, held: map[string]*heldSystem{}}
	at := func(sys string, written time.Duration, lost bool) *heldSystem {
		h := &heldSystem{sys: sys, until: e.validUntil(now.Add(-written)), lost: lost}
		l.held[sys] = h
		return h
	}
	old := at("old", lease/3, false)
	edge := at("edge", lease/12, false)
	at("fresh", lease/12-time.Millisecond, false)
	at("lost", lease, true)
	got := map[*heldSystem]bool{}
	for _, h := range l.renewable(now) {
		got[h] = true
	}
	if len(got) != 2 || !got[old] || !got[edge] {
		var names []string
		for h := range got {
			names = append(names, h.sys)
		}
		t.Fatalf("renewed %v; want old and edge (written LeaseDuration/3 and /12 ago), not fresh or lost", names)
	}
}

// heldCreate is a Store whose lock create for one system waits for the
// test.
type heldCreate struct {
	storage.Store
	sys     string
	entered chan struct{}
	release chan struct{}
}

func (s *heldCreate) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if strings.HasPrefix(key, syslock.KeyPrefix) && strings.Contains(key, s.sys) {
		close(s.entered)
		<-s.release
	}
	return s.Store.Create(ctx, key, value)
}

// A job starts as soon as its own system's claim is written, not when the
// slowest claim of its round is: with one lock write held, the jobs of the
// other systems of the same round run to completion meanwhile.
func TestClaimsDeliveredAsTheyLand(t *testing.T) {
	f := &fakeJobs{copies: map[string]Copy{}, done: map[string]chan struct{}{}}
	hc := &heldCreate{Store: newStore(), sys: "10.7.0.3", entered: make(chan struct{}), release: make(chan struct{})}
	f.store = hc
	f.e = New(engineConfig(f, hc))
	for i := range 3 {
		createOn(t, f, fmt.Sprint("j", i), fmt.Sprintf("redfish://10.7.0.%d/redfish/v1/Systems/1", i+1))
	}
	run(t, f.e)
	var once sync.Once
	letGo := func() { once.Do(func() { close(hc.release) }) }
	t.Cleanup(letGo)
	<-hc.entered
	f.wait(t, "j0")
	f.wait(t, "j1")
	letGo()
	f.wait(t, "j2")
}
