package job_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
)

// benchBMC is the fake BMC of the benchmarks here and of job.BenchSteps:
// answering at once, server On, and no call log. Nothing reads the log, and
// 64 BMCs never fill their default 10,000-entry rings in a run, so with it
// the Runner's figures would include growing and scanning up to 640,000
// logged calls (the BMC's cost, not the runner's), while the Stepper's single
// BMC fills its ring at once and then only overwrites it.
var benchBMC = fake.Options{Power: bmc.PowerOn, CallLogSize: -1}

// benchRunner starts a Runner over store and a fleet of bmcs fake BMCs
// (answering at once, servers On) and returns it with the BMCs' addresses;
// it stops at the end of the benchmark.
func benchRunner(b *testing.B, store storage.Store, bmcs int, workers int) (*job.Runner, []string) {
	fleet := fake.NewFleet()
	urls := make([]string, bmcs)
	for i := range urls {
		urls[i] = fmt.Sprintf("redfish://10.9.%d.%d/redfish/v1/Systems/1", i/200, i%200+1)
		if _, err := fleet.AddNew(urls[i], benchBMC); err != nil {
			b.Fatal(err)
		}
	}
	r, err := job.NewRunner(job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			PollInterval: time.Millisecond,
		}, Workers: workers,
		ScanInterval: 5 * time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	return r, urls
}

// BenchmarkRunner runs b.N netboot jobs (3 tasks each) through the Runner
// over 64 fake BMCs with no latency, on memstore: the runner's own overhead
// (state machine, JSON records, CAS writes, locks), not a BMC's.
func BenchmarkRunner(b *testing.B) {
	const bmcs = 64
	r, urls := benchRunner(b, memstore.New(), bmcs, 32)
	ctx := context.Background()

	spec := func(i int) job.Spec {
		s := netboot(urls[i%bmcs])
		s.CredentialsRef = ""
		return s
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := r.Submit(ctx, fmt.Sprintf("b%d", i), spec(i)); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < b.N; i++ {
		j, err := r.Wait(ctx, fmt.Sprintf("b%d", i))
		if err != nil || !j.Completed() {
			b.Fatalf("job b%d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	tasks := float64(3 * b.N)
	b.ReportMetric(tasks/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(cpu.Microseconds())/tasks, "cpu-µs/task")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/tasks, "allocs/task")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/tasks, "B/task")
}

// BenchmarkStep drives one 3-task job to completion per iteration with the
// Stepper alone (no store, no scheduling): the state machine's own cost.
func BenchmarkStep(b *testing.B) { job.BenchSteps(b, job.StepperConfig{}, false) }

// BenchmarkStepStored is BenchmarkStep plus the store work every job needs
// whoever runs it (job.BenchSteps): BenchmarkRunner's CPU per task over
// this one's is what the Runner adds by scheduling.
func BenchmarkStepStored(b *testing.B) { job.BenchSteps(b, job.StepperConfig{}, true) }

func cpuTime() time.Duration { return job.CPUTime() }

// countingStore counts committed writes (Create, Update, Delete) of job
// records. It passes the change feed through (feedStore) and the feed's
// storage.ValueSkipper.
type countingStore struct {
	feedStore
	jobWrites atomic.Int64
}

func (s *countingStore) ChangesSkipping(ctx context.Context, prefix string, since int64, limit int, skip func(string, int64) bool) (storage.Changes, error) {
	return storage.ChangesSkipping(ctx, s.Store.(storage.ChangeFeed), prefix, since, limit, skip)
}

func (s *countingStore) Create(ctx context.Context, k string, v []byte) (int64, error) {
	rev, err := s.Store.Create(ctx, k, v)
	if err == nil && strings.Contains(k, "/jobs/") {
		s.jobWrites.Add(1)
	}
	return rev, err
}

func (s *countingStore) Update(ctx context.Context, k string, v []byte, rev int64) (int64, error) {
	n, err := s.Store.Update(ctx, k, v, rev)
	if err == nil && strings.Contains(k, "/jobs/") {
		s.jobWrites.Add(1)
	}
	return n, err
}

// BenchmarkRunnerBoltstore runs b.N netboot jobs over 64 fake BMCs on a
// durable boltstore (every write fsynced before it is acknowledged), and in
// the same run a bare bbolt loop with one commit per write on the same disk:
// the durable runner's committed job transitions per second against that
// ceiling for one writer. The runner's concurrent writes share commits
// (group commit), so it can beat the one-commit-per-write loop.
func BenchmarkRunnerBoltstore(b *testing.B) {
	const bmcs = 64
	dir := b.TempDir()
	bs, err := boltstore.Open(filepath.Join(dir, "runner.db"), boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bs.Close()
	store := &countingStore{feedStore: feedStore{bs}}
	r, urls := benchRunner(b, store, bmcs, 0)
	ctx := context.Background()
	b.ResetTimer()
	// Submitted concurrently, as many clients would.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	start := time.Now()
	w0 := store.jobWrites.Load()
	for i := 0; i < b.N; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s := netboot(urls[i%bmcs])
			s.CredentialsRef = ""
			if _, err := r.Submit(ctx, fmt.Sprintf("b%d", i), s); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < b.N; i++ {
		if j, err := r.Wait(ctx, fmt.Sprintf("b%d", i)); err != nil || j.Status.Result != "Succeeded" {
			b.Fatalf("job b%d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	writes := store.jobWrites.Load() - w0
	b.StopTimer()

	// The ceiling, in the same run: one bbolt commit per write, serially.
	db, err := bolt.Open(filepath.Join(dir, "bare.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 1800) // about a job record
	bareN := 500
	bareStart := time.Now()
	for i := 0; i < bareN; i++ {
		if err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("bare"))
			if err != nil {
				return err
			}
			return bk.Put([]byte("jobs/bench"), value)
		}); err != nil {
			b.Fatal(err)
		}
	}
	bare := float64(bareN) / time.Since(bareStart).Seconds()
	rate := float64(writes) / elapsed.Seconds()
	b.ReportMetric(rate, "job-writes/s")
	b.ReportMetric(bare, "bare-commits/s")
	b.ReportMetric(rate/bare, "ratio")
	b.ReportMetric(float64(writes)/float64(b.N), "job-writes/job")
}
