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

// lockReads is a Store that counts the reads of system locks.
type lockReads struct {
	storage.Store
	n atomic.Int64
}

func (s *lockReads) Get(ctx context.Context, key string) (storage.Record, error) {
	if strings.HasPrefix(key, syslock.KeyPrefix) {
		s.n.Add(1)
	}
	return s.Store.Get(ctx, key)
}

// A round bound by the workers does not watch the systems it leaves for
// later: they wait for a worker, not for another replica, and reading
// their locks at every round cost a read per queued system.
func TestNoWatchBeyondTheWorkers(t *testing.T) {
	const n = 6
	f := &fakeJobs{copies: map[string]Copy{}, done: map[string]chan struct{}{}}
	lr := &lockReads{Store: newStore()}
	f.store = lr
	cfg := engineConfig(f, lr)
	cfg.Workers = 2
	f.e = New(cfg)
	for i := range n {
		createOn(t, f, fmt.Sprint("j", i), fmt.Sprintf("redfish://10.7.0.%d/redfish/v1/Systems/1", i+1))
	}
	run(t, f.e)
	for i := range n {
		f.wait(t, fmt.Sprint("j", i))
	}
	if got := lr.n.Load(); got != 0 {
		t.Fatalf("%d lock reads while one runner ran %d jobs on %d workers; want 0 (nothing to watch)", got, n, cfg.Workers)
	}
}

// The pace grows admit while claims are answered within half the target
// and the pace held the round back (doubling it under a quarter of the
// target), holds it when it did not, and halves it (to a floor) when
// claims queue past the target.
func TestPace(t *testing.T) {
	p := newPace(30*time.Second, 10_000)
	if p.admit != initialAdmit || p.target != time.Second {
		t.Fatalf("new pace: admit %d, target %v; want %d, 1s", p.admit, p.target, initialAdmit)
	}
	round := func(limited bool, took ...time.Duration) bool {
		p.roundStarts(limited)
		for _, d := range took {
			p.note(d)
		}
		return p.roundEnded(10_000)
	}
	if !round(true, time.Millisecond, 2*time.Millisecond, 3*time.Millisecond) || p.admit != 2*initialAdmit {
		t.Fatalf("fast, limited round: admit %d; want %d", p.admit, 2*initialAdmit)
	}
	if round(false, time.Millisecond) || p.admit != 2*initialAdmit {
		t.Fatalf("fast round the pace did not limit: admit %d; want it kept", p.admit)
	}
	for range 3 {
		round(true, time.Millisecond)
	}
	if p.admit != 10_000 {
		t.Fatalf("admit %d after fast rounds; want Workers (10000) at most", p.admit)
	}
	if round(true, 300*time.Millisecond) || p.admit != 10_000 {
		t.Fatalf("a round at Workers changed admit to %d", p.admit)
	}
	// Between a quarter and half of the target, admit grows in
	// proportion: at 250 ms of a 1 s target, twice; at 400 ms, 1.25 times;
	// from half the target to the target, it holds.
	p.admit = 4000
	if !round(true, 400*time.Millisecond) || p.admit != 5000 {
		t.Fatalf("a round at 400 ms of a 1 s target: admit %d; want 5000 (1.25 times 4000)", p.admit)
	}
	if round(true, 600*time.Millisecond) || p.admit != 5000 {
		t.Fatalf("a round at 600 ms of a 1 s target changed admit to %d; want it held", p.admit)
	}
	if round(false, 100*time.Millisecond) || p.admit != 5000 {
		t.Fatalf("a fast round the pace did not limit changed admit to %d", p.admit)
	}
	p.admit = 2048
	if !round(true, 260*time.Millisecond) || p.admit != 3938 {
		t.Fatalf("a round at 260 ms of a 1 s target: admit %d; want 3938 (2048 times 1/0.52)", p.admit)
	}
	p.admit = 10_000
	for range 20 {
		round(true, 2*time.Second, 2*time.Second, time.Millisecond)
	}
	if p.admit != minAdmit {
		t.Fatalf("admit %d after slow rounds; want the floor %d", p.admit, minAdmit)
	}
	if round(true) || p.admit != minAdmit {
		t.Fatal("a round without a successful claim changed admit")
	}
	if p := newPace(600*time.Millisecond, 100); p.target != 100*time.Millisecond || p.admit != 100 {
		t.Fatalf("short lease: target %v, admit %d; want 100ms and Workers", p.target, p.admit)
	}
}
