package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The curve (-curve): the same fleet run at several sizes on several stores,
// with the floor (-floor: job.Stepper alone, no store) at each size beside
// them, each run a fresh child process of this executable so that no run
// inherits another's heap. Rounds alternate the runs (floor, then each
// store, at each size, then again), and the table gives every round's
// figures so that their spread shows. The last columns divide the figure at
// the largest size by the one at the size before it: what grows with the
// fleet.

// summary is what a child run reports to the curve (-summary FILE).
type summary struct {
	Wall          time.Duration `json:"wall"`
	CPUPerTask    time.Duration `json:"cpuPerTask"`
	ServerCPU     time.Duration `json:"serverCpuPerTask"` // PostgreSQL's, per task; -1 unknown
	AllocsPerTask float64       `json:"allocsPerTask"`
	WritesPerJob  float64       `json:"writesPerJob"` // 0 for the floor
	RSSPerJob     float64       `json:"rssPerJobBytes"`
	OK            bool          `json:"ok"` // every job Succeeded, each effect once
}

func writeSummary(path string, s summary) {
	if path == "" {
		return
	}
	data, _ := json.Marshal(s)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench/fleet: -summary:", err)
	}
}

// curveRun is one child run of the curve.
type curveRun struct {
	store string // "" for the floor
	n     int
	round int
	sum   summary
	err   error
}

func runCurve(c config, sizes []int, stores []string, rounds int) (bool, error) {
	exe, err := os.Executable()
	if err != nil {
		return false, err
	}
	dir, err := os.MkdirTemp("", "bench-fleet-curve-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	var runs []*curveRun
	ok := true
	for round := 1; round <= rounds; round++ {
		for _, n := range sizes {
			for _, st := range append([]string{""}, stores...) {
				r := &curveRun{store: st, n: n, round: round}
				out := filepath.Join(dir, fmt.Sprintf("%d-%s-%d.json", round, st, n))
				args := []string{"-target", "fake", "-n", strconv.Itoa(n), "-latency", c.latency.String(),
					"-timeout", c.timeout.String(), "-summary", out}
				if st == "" {
					args = append(args, "-floor")
				} else {
					args = append(args, "-store", st)
				}
				cmd := exec.Command(exe, args...)
				cmd.Stderr = os.Stderr
				log, err := cmd.Output() // the child's own report, kept for a failure
				if data, rerr := os.ReadFile(out); rerr == nil {
					r.err = json.Unmarshal(data, &r.sum)
				} else if err != nil {
					r.err = fmt.Errorf("%v: %s", err, lastLines(string(log), 5))
				} else {
					r.err = rerr
				}
				if r.err != nil || !r.sum.OK {
					ok = false
				}
				name := st
				if name == "" {
					name = "floor"
				}
				fmt.Fprintf(os.Stderr, "bench/fleet -curve: round %d, %s, %d jobs: %s\n", round, name, n, r.cell())
				runs = append(runs, r)
			}
		}
	}
	printCurve(c, sizes, stores, runs)
	return ok, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], " / ")
}

func (r *curveRun) cell() string {
	if r.err != nil {
		return "error: " + r.err.Error()
	}
	cpu := fmtDur(r.sum.CPUPerTask)
	if r.sum.ServerCPU > 0 {
		cpu += " + " + fmtDur(r.sum.ServerCPU)
	}
	s := fmt.Sprintf("%s, %.0f allocs, %s RSS/job, wall %s", cpu, r.sum.AllocsPerTask, fmtBytes(r.sum.RSSPerJob), fmtDur(r.sum.Wall))
	if r.store != "" {
		s = fmt.Sprintf("%s, %.2f writes/job", s, r.sum.WritesPerJob)
	}
	if !r.sum.OK {
		s += " **NOT all Succeeded exactly once**"
	}
	return s
}

func printCurve(c config, sizes []int, stores []string, runs []*curveRun) {
	fmt.Printf("Fleet curve: fake BMCs, %s per call, one netboot job per BMC; CPU per task (getrusage of the whole process%s), heap allocations per task, peak RSS per job, store writes per job; one line per run, rounds alternating.\n\n",
		c.latency, map[bool]string{true: "; + PostgreSQL's server CPU", false: ""}[contains(stores, "postgres")])
	fmt.Printf("    go run ./bench/fleet %s\n\n", strings.Join(os.Args[1:], " "))
	fmt.Println("| jobs | round | floor (Stepper alone, no store) | " + strings.Join(stores, " | ") + " |")
	fmt.Println("|---" + strings.Repeat("|---", len(stores)+2) + "|")
	for _, n := range sizes {
		for _, r0 := range runs {
			if r0.n != n || r0.store != "" {
				continue
			}
			row := []string{strconv.Itoa(n), strconv.Itoa(r0.round), r0.cell()}
			for _, st := range stores {
				for _, r := range runs {
					if r.n == n && r.store == st && r.round == r0.round {
						row = append(row, r.cell())
					}
				}
			}
			fmt.Println("| " + strings.Join(row, " | ") + " |")
		}
	}
	if len(sizes) < 2 {
		return
	}
	a, b := sizes[len(sizes)-2], sizes[len(sizes)-1]
	fmt.Printf("\nGrowth from %d to %d jobs (the best round at each size; the issue's bound is 1.25× for CPU and allocations per task):\n\n", a, b)
	for _, st := range append([]string{""}, stores...) {
		ra, rb := best(runs, st, a), best(runs, st, b)
		if ra == nil || rb == nil {
			continue
		}
		name := st
		if name == "" {
			name = "floor"
		}
		cpuA, cpuB := ra.sum.CPUPerTask+max(ra.sum.ServerCPU, 0), rb.sum.CPUPerTask+max(rb.sum.ServerCPU, 0)
		fmt.Printf("- %s: CPU per task %s → %s (%.2f×), allocations per task %.0f → %.0f (%.2f×), RSS per job %s → %s.\n",
			name, fmtDur(cpuA), fmtDur(cpuB), float64(cpuB)/float64(cpuA),
			ra.sum.AllocsPerTask, rb.sum.AllocsPerTask, rb.sum.AllocsPerTask/ra.sum.AllocsPerTask,
			fmtBytes(ra.sum.RSSPerJob), fmtBytes(rb.sum.RSSPerJob))
	}
	fmt.Printf("\n- %d CPUs (GOMAXPROCS %d), %s, load average %s at the end.\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), loadAvg())
}

// best is the run of store at n with the least CPU per task: on a shared
// machine, the one least disturbed by others.
func best(runs []*curveRun, store string, n int) *curveRun {
	var b *curveRun
	for _, r := range runs {
		if r.store == store && r.n == n && r.err == nil && (b == nil || r.sum.CPUPerTask+r.sum.ServerCPU < b.sum.CPUPerTask+b.sum.ServerCPU) {
			b = r
		}
	}
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseSizes parses -curve-sizes.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-curve-sizes %q: %q is not a positive number of jobs", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}
