package job_test

import (
	"cmp"
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
// from Began until the SIGCONT sent at Ended, or its store hung from Began
// to Ended.
type disturbance struct {
	Replica      string
	Began, Ended time.Time
	// Lease is the replicas' lease length.
	Lease time.Duration
	// Held are the jobs the replica held when the disturbance began: it
	// had written them last (an intent at least) and they had not
	// completed.
	Held []string
	// Relocked names, as "<replica> <job>", the replicas whose Lock let a
	// job already completed act again (relockReporter), in the run.
	Relocked map[string]bool
	// ConnWaits are the requests that waited long for a connection
	// (replicaTagger's "connwait" lines).
	ConnWaits []connWait
	// InTx says the replica was stopped inside one of its store's
	// transactions (a group commit), holding the revision counter's row
	// lock that the other replica's writes need until PostgreSQL ends the
	// stopped session (sqlstore.Options.IdleInTransactionTimeout).
	InTx bool
}

// connWait is a request that waited for a connection, after the driver's
// fence admitted it, from Began to Got.
type connWait struct {
	Replica, Job  string
	Task, Attempt int
	Began, Got    time.Time
}

// replicaFindings counts what one run's request log shows.
type replicaFindings struct {
	// Requests and Untagged count the run's requests with and without a
	// job tag.
	Requests, Untagged int
	// Stale counts requests a replica sent for a job it no longer had:
	//   - the disturbed replica's requests for a job after another replica
	//     sent one for it after the disturbance began (whether or not the
	//     disturbed one had sent anything for it before: it may have
	//     written the intent and stopped before the action);
	//   - any replica's requests for a job after another replica sent one
	//     for it after the first replica's own (once a job moved on from a
	//     replica, that replica never acts for it again).
	Stale int
	// StaleFromDisturbed counts those of the disturbed replica, and
	// StaleStateChanges those that were state-changing (any replica).
	StaleFromDisturbed, StaleStateChanges int
	// StaleRelocked counts those a replica sent for a job after its Lock let
	// the job act again although it had completed (Relocked).
	StaleRelocked int
	// Takeovers counts the jobs the disturbed replica held (Held) that
	// another replica sent requests for after the disturbance began.
	Takeovers int
	// TakeoversAfterResume counts the takeovers whose first request came
	// only after the disturbance ended: the other replica could not act
	// while the disturbed one was stopped (its store waited behind the
	// stopped one's transaction, say). MaxTakeoverDelay is the longest
	// time from Began to a takeover's first request.
	TakeoversAfterResume int
	MaxTakeoverDelay     time.Duration
	// ResumedForHeld counts the disturbed replica's requests for the jobs
	// it held, sent after the disturbance ended: legitimate only for a job
	// nobody took over.
	ResumedForHeld int
	// InWindow counts the disturbed replica's requests from Began+Lease
	// (its lease had lapsed by then whatever it did) until Ended, with a
	// job tag; InWindowUntagged those without (logins, logouts, the opening
	// reads of a system).
	InWindow, InWindowUntagged int
	// Late counts the disturbed replica's requests that were stale or in
	// the window (each once), by how they came late:
	//   - LateIssued: issued (entered its transport: SentHeader) after the
	//     disturbance ended, or during a hang after the lease lapsed: the
	//     fence should have refused them;
	//   - LateConnWait: admitted while the lease was valid, then waited for
	//     a connection until after it lapsed (a fence checked before that
	//     wait lets them through);
	//   - LateInFlight: issued before the disturbance, without a long wait
	//     for a connection: paused between the fence's check and the write,
	//     a window no BMC protocol lets close (docs/jobs.md, "The fence").
	Late, LateIssued, LateConnWait, LateInFlight int
	// LateInFlightStateChanges counts the LateInFlight that were
	// state-changing.
	LateInFlightStateChanges int
	// MaxLateness is how long after Began+Lease (the latest its lease could
	// have lasted) the disturbed replica's last stale or in-window request
	// came; 0 if none came.
	MaxLateness time.Duration
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
		otherAfter string          // another replica that sent for it after Began
	}
	jobs := map[string]*jobState{}
	held := map[string]bool{}
	for _, j := range d.Held {
		held[j] = true
	}
	type taskKey struct {
		job  string
		task int
	}
	attempts := map[taskKey]map[int]int{} // sent state changes per attempt
	maxAttempt := map[taskKey]int{}
	lapse := d.Began.Add(d.Lease)
	lateSeen := map[int64]bool{}
	late := func(r loggedRequest) {
		if l := r.At.Sub(lapse); l > f.MaxLateness {
			f.MaxLateness = l
		}
		if lateSeen[r.Seq] {
			return
		}
		lateSeen[r.Seq] = true
		f.Late++
		waited := slices.ContainsFunc(d.ConnWaits, func(w connWait) bool {
			return w.Replica == r.Replica && w.Job == r.Job && w.Task == r.Task && w.Attempt == r.Attempt &&
				w.Began.Before(lapse) && !w.Got.Before(lapse) && !w.Got.After(r.At)
		})
		switch {
		case r.Sent.IsZero() || !r.Sent.Before(d.Ended) || !r.Sent.Before(lapse) && r.At.Before(d.Ended):
			f.LateIssued++
		case waited:
			f.LateConnWait++
			f.example("late request %s waited for a connection from before its lease lapsed until after", r)
		default:
			f.LateInFlight++
			if r.stateChanging() {
				f.LateInFlightStateChanges++
			}
			f.example("late request %s entered the transport %v before it arrived: in flight when the replica was paused",
				r, r.At.Sub(r.Sent).Round(time.Millisecond))
		}
	}
	for _, r := range reqs {
		inWindow := r.Replica == d.Replica && !r.At.Before(lapse) && r.At.Before(d.Ended)
		if inWindow && r.Job == "" {
			f.InWindowUntagged++
		}
		if r.Job == "" {
			f.Untagged++
			continue
		}
		f.Requests++
		if inWindow {
			f.InWindow++
			f.example("request %s came %v after the disturbance began: its lease had lapsed", r, r.At.Sub(d.Began).Round(time.Millisecond))
			late(r)
		}
		js := jobs[r.Job]
		if js == nil {
			js = &jobState{superseded: map[string]bool{}}
			jobs[r.Job] = js
		}
		if r.Replica == d.Replica && held[r.Job] && !r.At.Before(d.Ended) {
			f.ResumedForHeld++
		}
		switch {
		case js.superseded[r.Replica] || (r.Replica == d.Replica && js.otherAfter != ""):
			f.Stale++
			if r.stateChanging() {
				f.StaleStateChanges++
			}
			if r.Replica == d.Replica {
				f.StaleFromDisturbed++
				late(r)
			}
			why := ""
			if d.Relocked[r.Replica+" "+r.Job] {
				f.StaleRelocked++
				why = " (the replica had locked the system again for the job, which had completed)"
			}
			f.example("stale request %s: the job had moved on to %s%s", r, cmp.Or(js.otherAfter, js.current), why)
		case js.current != "" && js.current != r.Replica:
			js.superseded[js.current] = true
			js.current = r.Replica
		default:
			js.current = r.Replica
		}
		if r.Replica != d.Replica && r.At.After(d.Began) && js.otherAfter == "" {
			js.otherAfter = r.Replica
			if held[r.Job] {
				f.Takeovers++
				f.MaxTakeoverDelay = max(f.MaxTakeoverDelay, r.At.Sub(d.Began))
				if !r.At.Before(d.Ended) {
					f.TakeoversAfterResume++
				}
			}
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
	return f
}

// The checks can fail: a synthetic log with a takeover, a stale poll and a
// stale reset from the paused replica, a duplicate and an old attempt
// counts each; a clean takeover counts none; a takeover that came only when
// the disturbance ended counts as such.
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
		get3  = "/redfish/v1/Systems/3"
	)
	d := disturbance{Replica: "r1", Began: ms(1000), Ended: ms(4000), Lease: time.Second, Held: []string{"a", "c"}, Relocked: map[string]bool{"r1 d": true}}
	clean := []loggedRequest{
		req(0, "r1", "", 0, 0, "POST", "/redfish/v1/SessionService/Sessions"),
		req(10, "r1", "a", 0, 1, "POST", reset),
		req(20, "r1", "a", 0, 1, "GET", get),
		req(900, "r2", "b", 0, 1, "POST", "/redfish/v1/Systems/2/Actions/ComputerSystem.Reset"),
		req(2300, "r2", "a", 0, 2, "GET", get), // takeover: attempt 2 rechecks
		req(2400, "r2", "a", 1, 1, "PATCH", get),
		// c: r1 wrote the intent and stopped before sending anything.
		req(2500, "r2", "c", 0, 2, "GET", get3),
		req(2510, "r2", "c", 0, 2, "POST", get3+"/Actions/ComputerSystem.Reset"),
		req(4100, "r1", "", 0, 0, "DELETE", "/redfish/v1/SessionService/Sessions/1"),
	}
	f := analyzeReplicaLog(clean, d)
	if f.Stale != 0 || f.Takeovers != 2 || f.InWindow != 0 || f.DupAttempts != 0 || f.OldAttempts != 0 || f.MaxLateness != 0 ||
		f.Requests != 7 || f.Untagged != 2 || f.ResumedForHeld != 0 || f.TakeoversAfterResume != 0 || f.MaxTakeoverDelay != 1500*time.Millisecond {
		t.Fatalf("clean log: %+v", f)
	}
	dirty := append(slices.Clone(clean),
		req(4050, "r1", "a", 0, 1, "GET", get),    // stale poll after SIGCONT
		req(4060, "r1", "a", 0, 1, "POST", reset), // stale reset: a second one of attempt 1
		req(2600, "r1", "", 0, 0, "GET", "/redfish/v1"),
		req(2700, "r2", "a", 0, 2, "POST", reset),
		req(4200, "r1", "a", 0, 1, "POST", reset),                                                // old attempt, duplicate, stale
		req(4001, "r1", "c", 0, 1, "POST", get3+"/Actions/ComputerSystem.Reset"),                 // its first request, stale
		req(4300, "r2", "d", 0, 1, "GET", "/redfish/v1/Systems/4"),                               // d: r2 first,
		req(4400, "r1", "d", 0, 1, "GET", "/redfish/v1/Systems/4"),                               // r1 after it: stale
		req(4500, "r2", "e", 0, 1, "GET", "/redfish/v1/Systems/5"),                               // e: r2,
		req(4600, "r3", "e", 0, 2, "GET", "/redfish/v1/Systems/5"),                               // then r3,
		req(4700, "r2", "e", 0, 1, "POST", "/redfish/v1/Systems/5/Actions/ComputerSystem.Reset"), // r2 again: stale
	)
	// Shuffle: Seq, not slice order, is the BMC's.
	slices.Reverse(dirty)
	f = analyzeReplicaLog(dirty, d)
	want := replicaFindings{Requests: 17, Untagged: 3, Stale: 6, StaleFromDisturbed: 5, StaleStateChanges: 4, StaleRelocked: 1, Takeovers: 2, MaxTakeoverDelay: 1500 * time.Millisecond, ResumedForHeld: 4,
		InWindow: 0, InWindowUntagged: 1, Late: 5, LateIssued: 5, MaxLateness: 2400 * time.Millisecond, DupAttempts: 2, OldAttempts: 2}
	f.Examples = nil
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
		req(3000, "r2", "a", 0, 2, "GET", get), // taken over only when the hang ended
	}
	f = analyzeReplicaLog(hung, disturbance{Replica: "r1", Began: ms(1000), Ended: ms(3000), Lease: time.Second, Held: []string{"a"}})
	if f.InWindow != 1 || f.InWindowUntagged != 1 || f.MaxLateness != 100*time.Millisecond || f.Stale != 0 || f.Takeovers != 1 || f.Late != 1 || f.LateIssued != 1 ||
		f.TakeoversAfterResume != 1 || f.MaxTakeoverDelay != 2*time.Second {
		t.Fatalf("hang: %+v", f)
	}
	if !strings.Contains(strings.Join(f.Examples, "\n"), "#2 ") {
		t.Fatalf("hang examples: %v", f.Examples)
	}

	// How late requests came late: issued after the resume, admitted and
	// then waiting for a connection across the pause, or in flight.
	seq = 0
	sent := func(r loggedRequest, at int) loggedRequest { r.Sent = ms(at); return r }
	paused := []loggedRequest{
		sent(req(100, "r1", "x", 0, 1, "GET", get), 99),
		sent(req(150, "r1", "y", 0, 1, "GET", get3), 149),
		sent(req(2500, "r2", "x", 0, 2, "GET", get), 2499),
		sent(req(2600, "r2", "y", 0, 2, "GET", get3), 2599),
		sent(req(4002, "r1", "x", 0, 1, "GET", get), 900),                                   // waited for a connection
		sent(req(4003, "r1", "y", 0, 1, "POST", get3+"/Actions/ComputerSystem.Reset"), 999), // in flight
		sent(req(4010, "r1", "x", 0, 1, "GET", get), 4005),                                  // issued after the resume
	}
	f = analyzeReplicaLog(paused, disturbance{Replica: "r1", Began: ms(1000), Ended: ms(4000), Lease: time.Second, Held: []string{"x", "y"},
		ConnWaits: []connWait{{Replica: "r1", Job: "x", Task: 0, Attempt: 1, Began: ms(900), Got: ms(4001)}}})
	if f.Stale != 3 || f.StaleFromDisturbed != 3 || f.Late != 3 || f.LateIssued != 1 || f.LateConnWait != 1 || f.LateInFlight != 1 || f.LateInFlightStateChanges != 1 || f.Takeovers != 2 {
		t.Fatalf("paused: %+v", f)
	}
}
