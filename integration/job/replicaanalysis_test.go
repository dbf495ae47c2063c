package job_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The analysis behind the replica tests (sigstop_test.go): pure functions
// over the log of every request the simulated BMC received in one run, each
// tagged with the replica that sent it and the job, task and attempt.

// disturbance is what was done to one replica in a run: paused (SIGSTOP)
// from Began to Ended, or its store hung from Began to Ended.
type disturbance struct {
	Replica      string
	Began, Ended time.Time
	// Lease is the replicas' lease length.
	Lease time.Duration
}

// replicaFindings counts what one run's request log shows.
type replicaFindings struct {
	// Requests and Untagged count the run's requests with and without a
	// job tag.
	Requests, Untagged int
	// Stale counts requests sent by a replica for a job after another
	// replica sent one for it after the first replica's own: once a job
	// moved on from a replica, that replica must never act for it again.
	Stale int
	// StaleFromDisturbed counts those of the disturbed replica, and
	// StaleStateChanges those that were state-changing (any replica).
	StaleFromDisturbed, StaleStateChanges int
	// Takeovers counts jobs the disturbed replica sent requests for before
	// the disturbance began and another replica sent requests for after.
	Takeovers int
	// InWindow counts the disturbed replica's requests between Began+Lease
	// and Ended (its lease had lapsed by then whatever it did), with job
	// tag and without (InWindowUntagged: logins, logouts).
	InWindow, InWindowUntagged int
	// MaxLateness is how long after Began+Lease (the latest its lease could
	// have lasted) the disturbed replica's last stale or in-window request
	// came; 0 if none came.
	MaxLateness time.Duration
	// MaxAfterBegan is how long after Began the disturbed replica's last
	// request for a job it then lost came (a request it could still send
	// legitimately, within its lease, or a stale one).
	MaxAfterBegan time.Duration
	// DupAttempts counts state-changing requests beyond the first of one
	// task attempt (job, task, attempt); OldAttempts those of an attempt
	// lower than one already sent for the task.
	DupAttempts, OldAttempts int
	Examples                 []string
}

func (f *replicaFindings) example(format string, args ...any) {
	if len(f.Examples) < 10 {
		f.Examples = append(f.Examples, fmt.Sprintf(format, args...))
	}
}

// analyzeReplicaLog checks one run's requests (any order; Seq is the
// BMC's) against d.
func analyzeReplicaLog(reqs []loggedRequest, d disturbance) replicaFindings {
	var f replicaFindings
	reqs = slices.Clone(reqs)
	slices.SortFunc(reqs, func(a, b loggedRequest) int { return int(a.Seq - b.Seq) })
	type jobState struct {
		current    string          // the replica acting for the job now
		superseded map[string]bool // replicas the job moved on from
		before     bool            // the disturbed replica sent for it before Began
		after      bool            // another replica sent for it after Began
	}
	jobs := map[string]*jobState{}
	type taskKey struct {
		job  string
		task int
	}
	attempts := map[taskKey]map[int]int{} // sent state changes per attempt
	maxAttempt := map[taskKey]int{}
	lapse := d.Began.Add(d.Lease)
	late := func(r loggedRequest) {
		if l := r.At.Sub(lapse); l > f.MaxLateness {
			f.MaxLateness = l
		}
	}
	for _, r := range reqs {
		if r.Replica == d.Replica && !r.At.Before(lapse) && !r.At.After(d.Ended) {
			if r.Job == "" {
				f.InWindowUntagged++
			} else {
				f.InWindow++
				f.example("request %s came %v after the disturbance began, its lease had lapsed", r, r.At.Sub(d.Began).Round(time.Millisecond))
				late(r)
			}
		}
		if r.Job == "" {
			f.Untagged++
			continue
		}
		f.Requests++
		js := jobs[r.Job]
		if js == nil {
			js = &jobState{superseded: map[string]bool{}}
			jobs[r.Job] = js
		}
		switch {
		case js.superseded[r.Replica]:
			f.Stale++
			if r.stateChanging() {
				f.StaleStateChanges++
			}
			if r.Replica == d.Replica {
				f.StaleFromDisturbed++
				late(r)
			}
			f.example("stale request %s: the job had moved on to %s", r, js.current)
		case js.current != "" && js.current != r.Replica:
			js.superseded[js.current] = true
			js.current = r.Replica
		default:
			js.current = r.Replica
		}
		if r.Replica == d.Replica && r.At.Before(d.Began) {
			js.before = true
		}
		if r.Replica != d.Replica && r.At.After(d.Began) && js.before && !js.after {
			js.after = true
			f.Takeovers++
		}
		if r.stateChanging() {
			k := taskKey{r.Job, r.Task}
			if attempts[k] == nil {
				attempts[k] = map[int]int{}
			}
			attempts[k][r.Attempt]++
			if attempts[k][r.Attempt] > 1 {
				f.DupAttempts++
				f.example("state-changing request %s: attempt %d of the task sent it already", r, r.Attempt)
			}
			if r.Attempt < maxAttempt[k] {
				f.OldAttempts++
				f.example("state-changing request %s: attempt %d of the task was sent already", r, maxAttempt[k])
			}
			maxAttempt[k] = max(maxAttempt[k], r.Attempt)
		}
	}
	// The disturbed replica's last request for each job it lost.
	for _, r := range reqs {
		if js := jobs[r.Job]; r.Job != "" && r.Replica == d.Replica && js != nil && js.superseded[d.Replica] && r.At.After(d.Began) {
			f.MaxAfterBegan = max(f.MaxAfterBegan, r.At.Sub(d.Began))
		}
	}
	return f
}

// The checks can fail: a synthetic log with a takeover, a stale poll and a
// stale reset from the paused replica, a duplicate and an old attempt
// counts each; a clean takeover counts none.
func TestReplicaAnalysisCountsViolations(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var seq int64
	req := func(at int, replica, job string, task, attempt int, method, path string) loggedRequest {
		seq++
		return loggedRequest{Seq: seq, At: ms(at), Replica: replica, Job: job, Task: task, Attempt: attempt, Method: method, Path: path}
	}
	const (
		get   = "/redfish/v1/Systems/1"
		reset = "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
	)
	d := disturbance{Replica: "r1", Began: ms(1000), Ended: ms(4000), Lease: time.Second}
	clean := []loggedRequest{
		req(0, "r1", "", 0, 0, "POST", "/redfish/v1/SessionService/Sessions"),
		req(10, "r1", "a", 0, 1, "POST", reset),
		req(20, "r1", "a", 0, 1, "GET", get),
		req(900, "r2", "b", 0, 1, "POST", "/redfish/v1/Systems/2/Actions/ComputerSystem.Reset"),
		req(2300, "r2", "a", 0, 2, "GET", get), // takeover: attempt 2 rechecks
		req(2400, "r2", "a", 1, 1, "PATCH", get),
		req(4100, "r1", "", 0, 0, "DELETE", "/redfish/v1/SessionService/Sessions/1"),
	}
	f := analyzeReplicaLog(clean, d)
	if f.Stale != 0 || f.Takeovers != 1 || f.InWindow != 0 || f.DupAttempts != 0 || f.OldAttempts != 0 || f.MaxLateness != 0 || f.Requests != 5 || f.Untagged != 2 {
		t.Fatalf("clean log: %+v", f)
	}
	dirty := append(slices.Clone(clean),
		req(4050, "r1", "a", 0, 1, "GET", get),    // stale poll after SIGCONT
		req(4060, "r1", "a", 0, 1, "POST", reset), // stale reset: a second one of attempt 1
		req(2500, "r1", "", 0, 0, "GET", "/redfish/v1"),
		req(2600, "r2", "a", 0, 2, "POST", reset),
		req(4200, "r1", "a", 0, 1, "POST", reset), // old attempt, duplicate, stale
	)
	// Shuffle: Seq, not slice order, is the BMC's.
	slices.Reverse(dirty)
	f = analyzeReplicaLog(dirty, d)
	want := replicaFindings{Requests: 9, Untagged: 3, Stale: 3, StaleFromDisturbed: 3, StaleStateChanges: 2, Takeovers: 1,
		InWindow: 0, InWindowUntagged: 1, MaxLateness: 2200 * time.Millisecond, DupAttempts: 2, OldAttempts: 1}
	f.Examples, f.MaxAfterBegan = nil, 0
	if fmt.Sprint(f) != fmt.Sprint(want) {
		t.Fatalf("got  %+v\nwant %+v", f, want)
	}
	// A hang: requests by r1 from Began+Lease to Ended count, with or
	// without job.
	seq = 0
	hung := []loggedRequest{
		req(500, "r1", "a", 0, 1, "GET", get),  // within the lease: fine
		req(2100, "r1", "a", 0, 1, "GET", get), // in the window
		req(2200, "r1", "", 0, 0, "DELETE", "/redfish/v1/SessionService/Sessions/1"),
		req(3000, "r2", "a", 0, 2, "GET", get),
	}
	f = analyzeReplicaLog(hung, disturbance{Replica: "r1", Began: ms(1000), Ended: ms(3000), Lease: time.Second})
	if f.InWindow != 1 || f.InWindowUntagged != 1 || f.MaxLateness != 100*time.Millisecond || f.Stale != 0 || f.Takeovers != 1 {
		t.Fatalf("hang: %+v", f)
	}
	if !strings.Contains(strings.Join(f.Examples, "\n"), "#2 ") {
		t.Fatalf("hang examples: %v", f.Examples)
	}
}
