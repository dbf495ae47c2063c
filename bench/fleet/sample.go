package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sample is one look at the process during a run.
type sample struct {
	goroutines int
	liveHeap   uint64 // bytes of live heap objects as of the last GC
	open       int64  // BMC connections held by jobs
	inCall     int64  // BMC calls in flight
	inStore    int64  // job-record reads and writes in flight
}

// waiting is the jobs between steps: holding a BMC connection, with neither
// a BMC call nor a job-record operation in flight.
func (s sample) waiting() int64 { return max(0, s.open-s.inCall-s.inStore) }

// active is the jobs in a step.
func (s sample) active() int64 { return s.inCall + s.inStore }

// sampler looks at the process every interval until stopped.
type sampler struct {
	t *tracker
	// heapProfile, if set, gets a heap profile (in-use and allocated
	// bytes) the first time most jobs are in a step at once.
	heapProfile string
	n           int
	stopCh      chan struct{}
	doneCh      chan struct{}
	samples     []sample
}

func startSampler(t *tracker, every time.Duration, n int, heapProfile string) *sampler {
	s := &sampler{t: t, stopCh: make(chan struct{}), doneCh: make(chan struct{}), n: n, heapProfile: heapProfile}
	go func() {
		defer close(s.doneCh)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			smp := s.look()
			s.samples = append(s.samples, smp)
			if s.heapProfile != "" && smp.active() >= int64(s.n)*9/10 {
				writeHeapProfile(s.heapProfile)
				s.heapProfile = ""
			}
			select {
			case <-s.stopCh:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) look() sample {
	return sample{goroutines: runtime.NumGoroutine(), liveHeap: liveHeap(), open: s.t.open.Load(), inCall: s.t.inCall.Load(), inStore: s.t.inStore.Load()}
}

// stop ends sampling and returns the samples.
func (s *sampler) stop() []sample {
	close(s.stopCh)
	<-s.doneCh
	return s.samples
}

// writeHeapProfile writes the heap profile as of the last GC to path, or
// says on stderr why it could not.
func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/fleet: heap profile:", err)
	}
}

var liveHeapMetric = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// liveHeap is the heap occupied by live objects as of the last GC.
func liveHeap() uint64 {
	metrics.Read(liveHeapMetric)
	if liveHeapMetric[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return liveHeapMetric[0].Value.Uint64()
}

// usage is this process's resource use so far (getrusage), and the heap
// objects it allocated (runtime/metrics).
type usage struct {
	user, sys time.Duration
	minFaults int64 // minor page faults: first touches of fresh memory, mostly
	allocs    uint64
}

// cpu is user plus system time.
func (u usage) cpu() time.Duration { return u.user + u.sys }

func (u usage) sub(v usage) usage {
	return usage{user: u.user - v.user, sys: u.sys - v.sys, minFaults: u.minFaults - v.minFaults, allocs: u.allocs - v.allocs}
}

func usageNow() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usage{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()), minFaults: ru.Minflt, allocs: heapAllocs()}
}

var allocsMetric = []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}

// heapAllocs is the count of heap objects allocated so far.
func heapAllocs() uint64 {
	metrics.Read(allocsMetric)
	if allocsMetric[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return allocsMetric[0].Value.Uint64()
}

// procStatusKB reads a "Name: N kB" line of /proc/self/status.
func procStatusKB(name string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// resetPeakRSS resets VmHWM to the current RSS (Linux clear_refs 5); it
// reports whether that worked.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return f[0] + " " + f[1] + " " + f[2]
}

// goroutineFit fits goroutines = a + b*active + c*waiting over the samples
// (least squares): b is the goroutines per job in a step, c per job waiting
// between steps. ok is false when too few jobs were ever seen waiting (at
// least minWaiting at some sample) or the fit is degenerate.
func goroutineFit(ss []sample, minWaiting int64) (perActive, perWaiting float64, ok bool) {
	var maxWaiting int64
	for _, s := range ss {
		maxWaiting = max(maxWaiting, s.waiting())
	}
	if len(ss) < 10 || maxWaiting < minWaiting {
		return 0, 0, false
	}
	// Normal equations X'X beta = X'y with X = [1, inCall, waiting].
	var m [3][4]float64
	for _, s := range ss {
		x := [3]float64{1, float64(s.active()), float64(s.waiting())}
		for i := range 3 {
			for j := range 3 {
				m[i][j] += x[i] * x[j]
			}
			m[i][3] += x[i] * float64(s.goroutines)
		}
	}
	for col := range 3 {
		p := col
		for r := col + 1; r < 3; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[p][col]) {
				p = r
			}
		}
		if math.Abs(m[p][col]) < 1e-9 {
			return 0, 0, false
		}
		m[col], m[p] = m[p], m[col]
		for r := range 3 {
			if r == col {
				continue
			}
			f := m[r][col] / m[col][col]
			for k := col; k < 4; k++ {
				m[r][k] -= f * m[col][k]
			}
		}
	}
	return m[1][3] / m[1][1], m[2][3] / m[2][2], true
}
