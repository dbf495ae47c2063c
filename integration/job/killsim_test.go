package job_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The analysis behind TestRunnerSIGKILL: pure functions over the log of
// state-changing requests a simulated BMC applied, each tagged with the job,
// task and attempt that sent it (the X-Bmckit-Call header).

// bmcRequest is one state-changing request as the BMC applied it.
type bmcRequest struct {
	// Seq is the order in which the BMC applied it.
	Seq int64
	// System is the BMC's system ID.
	System string
	// What is what was asked, e.g. "reset:ForceOff".
	What string
	// Job, Task and Attempt come from the caller tag; Job is "" for an
	// untagged request.
	Job     string
	Task    int
	Attempt int
}

// parseCallerTag splits "job/task/attempt"; ok is false for an empty or
// malformed tag.
func parseCallerTag(tag string) (job string, task, attempt int, ok bool) {
	rest, a, ok1 := cutLast(tag, "/")
	name, tk, ok2 := cutLast(rest, "/")
	if !ok1 || !ok2 || name == "" {
		return "", 0, 0, false
	}
	ti, err1 := strconv.Atoi(tk)
	ai, err2 := strconv.Atoi(a)
	if err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return name, ti, ai, true
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// killFindings counts what the request log shows. Every count but the
// request counts is a violation.
type killFindings struct {
	Requests int
	// PerJob counts requests by job.
	PerJob map[string]int
	// Untagged requests carry no caller tag: the other checks cannot see
	// them, so they fail the test too.
	Untagged int
	// Misdirected requests reached a system their job does not target (or
	// came from a job nobody submitted).
	Misdirected int
	// Interleavings counts ordered pairs (X, Y) of jobs on one system where
	// Y sent a request between X's first and last request.
	Interleavings int
	// Reorders counts pairs of jobs on one system whose first requests
	// came in the opposite order of their submission.
	Reorders int
	// Resent counts, per job, each request whose task index is lower than
	// the one before it: a finished task sent again.
	Resent int
	// Examples describes the first few violations.
	Examples []string
}

func (f *killFindings) violation(format string, args ...any) {
	if len(f.Examples) < 10 {
		f.Examples = append(f.Examples, fmt.Sprintf(format, args...))
	}
}

// Violations is the number of violations of any kind.
func (f *killFindings) Violations() int {
	return f.Untagged + f.Misdirected + f.Interleavings + f.Reorders + f.Resent
}

// perJobRange is "min/avg/max" requests per job over the jobs in names.
func (f *killFindings) perJobRange(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	lo, hi, sum := -1, 0, 0
	for _, n := range names {
		c := f.PerJob[n]
		sum += c
		hi = max(hi, c)
		if lo < 0 || c < lo {
			lo = c
		}
	}
	return fmt.Sprintf("%d/%.1f/%d", lo, float64(sum)/float64(len(names)), hi)
}

// analyzeKillLog checks the request log against the scheduling invariants.
// submitted maps each system ID to its jobs' names in submission order.
func analyzeKillLog(reqs []bmcRequest, submitted map[string][]string) killFindings {
	f := killFindings{PerJob: map[string]int{}}
	reqs = slices.Clone(reqs)
	slices.SortFunc(reqs, func(a, b bmcRequest) int { return int(a.Seq - b.Seq) })
	systemOf := map[string]string{}
	for sys, names := range submitted {
		for _, n := range names {
			systemOf[n] = sys
		}
	}
	bySystem := map[string][]bmcRequest{}
	lastTask := map[string]bmcRequest{}
	for _, r := range reqs {
		f.Requests++
		if r.Job == "" {
			f.Untagged++
			f.violation("request #%d (%s on system %s) carries no caller tag", r.Seq, r.What, r.System)
			continue
		}
		f.PerJob[r.Job]++
		if systemOf[r.Job] != r.System {
			f.Misdirected++
			f.violation("request #%d: job %s sent %s to system %s", r.Seq, r.Job, r.What, r.System)
			continue
		}
		if prev, ok := lastTask[r.Job]; ok && r.Task < prev.Task {
			f.Resent++
			f.violation("request #%d: job %s sent task %d (%s) after task %d (request #%d)", r.Seq, r.Job, r.Task, r.What, prev.Task, prev.Seq)
		}
		lastTask[r.Job] = r
		bySystem[r.System] = append(bySystem[r.System], r)
	}
	for _, sys := range sortedKeys(submitted) {
		log := bySystem[sys]
		first, last := map[string]int{}, map[string]int{}
		for i, r := range log {
			if _, ok := first[r.Job]; !ok {
				first[r.Job] = i
			}
			last[r.Job] = i
		}
		for _, x := range sortedKeys(first) {
			seen := map[string]bool{}
			if last[x] == first[x] {
				continue
			}
			for _, r := range log[first[x]+1 : last[x]] {
				if r.Job != x && !seen[r.Job] {
					seen[r.Job] = true
					f.Interleavings++
					f.violation("system %s: job %s sent request #%d (%s) while job %s was between requests #%d and #%d",
						sys, r.Job, r.Seq, r.What, x, log[first[x]].Seq, log[last[x]].Seq)
				}
			}
		}
		names := submitted[sys]
		for i, a := range names {
			fa, okA := first[a]
			for _, b := range names[i+1:] {
				if fb, okB := first[b]; okA && okB && fb < fa {
					f.Reorders++
					f.violation("system %s: job %s (submitted later) started at request #%d, before job %s at #%d",
						sys, b, log[fb].Seq, a, log[fa].Seq)
				}
			}
		}
	}
	return f
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The checks can fail: a synthetic log with one interleaving, one reorder,
// one re-sent task and one untagged request counts each exactly once.
func TestKillAnalysisCountsViolations(t *testing.T) {
	var seq int64
	req := func(sys, job string, task int) bmcRequest {
		seq++
		return bmcRequest{Seq: seq, System: sys, What: "reset:On", Job: job, Task: task, Attempt: 1}
	}
	reqs := []bmcRequest{
		// System 1: b sends a request while a is half done.
		req("1", "a", 0), req("1", "a", 1), req("1", "b", 0), req("1", "a", 2), req("1", "a", 3),
		// System 2: e, submitted after d, runs first.
		req("2", "e", 0), req("2", "e", 1), req("2", "d", 0), req("2", "d", 1),
		// System 3: f sends task 1 again after task 2.
		req("3", "f", 0), req("3", "f", 1), req("3", "f", 2), req("3", "f", 1), req("3", "f", 3),
		// One untagged request.
		req("3", "", 0),
	}
	// Seq order, not slice order, is the BMC's order.
	slices.Reverse(reqs)
	submitted := map[string][]string{"1": {"a", "b"}, "2": {"d", "e"}, "3": {"f"}}
	f := analyzeKillLog(reqs, submitted)
	want := killFindings{Requests: 15, Untagged: 1, Interleavings: 1, Reorders: 1, Resent: 1}
	if f.Requests != want.Requests || f.Untagged != want.Untagged || f.Misdirected != 0 ||
		f.Interleavings != want.Interleavings || f.Reorders != want.Reorders || f.Resent != want.Resent {
		t.Fatalf("got requests %d untagged %d misdirected %d interleavings %d reorders %d resent %d, want %+v\n%s",
			f.Requests, f.Untagged, f.Misdirected, f.Interleavings, f.Reorders, f.Resent, want, strings.Join(f.Examples, "\n"))
	}
	if got := f.perJobRange([]string{"a", "b", "d", "e", "f"}); got != "1/2.8/5" {
		t.Errorf("per-job range %q", got)
	}
	// The same jobs run cleanly pass every check.
	seq = 0
	clean := []bmcRequest{req("1", "a", 0), req("1", "a", 3), req("1", "b", 0), req("2", "d", 0), req("2", "e", 0), req("3", "f", 2), req("3", "f", 2)}
	if f := analyzeKillLog(clean, submitted); f.Violations() != 0 {
		t.Fatalf("clean log: %d violations: %v", f.Violations(), f.Examples)
	}
	// A request to another system is misdirected.
	if f := analyzeKillLog([]bmcRequest{req("2", "a", 0)}, submitted); f.Misdirected != 1 {
		t.Fatalf("misdirected: %+v", f)
	}
	for _, c := range []struct {
		tag  string
		job  string
		task int
		ok   bool
	}{{"sys1-job0/2/1", "sys1-job0", 2, true}, {"", "", 0, false}, {"x/1", "", 0, false}, {"/1/1", "", 0, false}, {"a/b/1", "", 0, false}} {
		j, tk, _, ok := parseCallerTag(c.tag)
		if j != c.job || tk != c.task || ok != c.ok {
			t.Errorf("parseCallerTag(%q) = %q, %d, %v", c.tag, j, tk, ok)
		}
	}
}
