package job_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
)

// BenchmarkRunner runs b.N netboot jobs (3 tasks each) through the Runner
// over 64 fake BMCs with no latency, on memstore: the runner's own overhead
// (state machine, JSON records, CAS writes, locks), not a BMC's.
func BenchmarkRunner(b *testing.B) {
	const bmcs = 64
	fleet := fake.NewFleet()
	urls := make([]string, bmcs)
	for i := range urls {
		urls[i] = fmt.Sprintf("redfish://10.9.%d.%d/redfish/v1/Systems/1", i/200, i%200+1)
		if _, err := fleet.AddNew(urls[i], fake.Options{Power: bmc.PowerOn}); err != nil {
			b.Fatal(err)
		}
	}
	r, err := job.NewRunner(job.Config{
		Store: memstore.New(), Dialer: fleet, Workers: 32,
		PollInterval: time.Millisecond, ScanInterval: 5 * time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()

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
func BenchmarkStep(b *testing.B) {
	f := fake.New(fake.Options{Power: bmc.PowerOn})
	s, err := job.NewStepper(job.StepperConfig{Dialer: f})
	if err != nil {
		b.Fatal(err)
	}
	persist := func(context.Context, *job.Job) error { return nil }
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		j := &job.Job{Name: "s", Generation: 1, Spec: netboot("redfish://10.9.0.1/redfish/v1/Systems/1")}
		j.Spec.CredentialsRef = ""
		for {
			res, err := s.Step(ctx, j, persist)
			if err != nil {
				b.Fatal(err)
			}
			if res.Done {
				break
			}
		}
		if j.Status.Result != "Succeeded" {
			b.Fatal(j.Status.Message)
		}
	}
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(3*b.N), "cpu-µs/task")
}

// cpuTime is the CPU time (user + system) the process used so far, from
// its own accounting: the stable figure on a shared machine, where wall
// clock rates move with other load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
