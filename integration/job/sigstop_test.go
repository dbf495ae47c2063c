//go:build linux

package job_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

// The end-to-end tests of "no stale BMC request after a lost lease" (issue
// 22): a replica that is paused (SIGSTOP) while it holds systems, or whose
// store hangs, and that resumes after another replica took its jobs over,
// must send nothing more for those jobs. A Redfish simulator child logs
// every request it receives with the replica and the job, task and attempt
// that sent it (requestlog_test.go); replica children over one PostgreSQL
// store (replicachild_test.go) run 30 runs or more, each on tables of its
// own, and the log of each run is checked (replicaanalysis_test.go):
//
//   - every job Succeeded;
//   - per job, once another replica sent a request for it, a replica that
//     sent for it before sends nothing more (none "stale"); above all the
//     disturbed one;
//   - a takeover happened: a job the disturbed replica had started was
//     continued by another;
//   - no state-changing request (reset, boot PATCH) repeats a task attempt
//     or comes from an attempt older than one already sent;
//   - the state changes obey the scheduling invariants of the SIGKILL test
//     (killsim_test.go): no two jobs interleave on a system, each system's
//     jobs start in submission order, no finished task is sent again.
//
// Each prints a one-line summary for the docs. They need PostgreSQL
// (BMCKIT_TEST_POSTGRES_DSN; skipped without it, failed under CI=true) and
// take a few minutes each; they skip under -short.

const (
	replicaStopLeases      = 3       // a SIGSTOP lasts this many leases
	replicaHangSlowActions = 1.0 / 3 // the fraction of actions answered late in TestRunnerStoreHang
)

// TestRunnerSIGSTOP: two Runner replicas; the one that first holds a
// started job is SIGSTOPped for 3 leases, then continued.
func TestRunnerSIGSTOP(t *testing.T) {
	if replicaChildRole() {
		return
	}
	if testing.Short() {
		t.Skip("30 runs of two Runner replicas, one SIGSTOPped for 3 leases each run; takes minutes")
	}
	began := time.Now()
	h := newReplicaHarness(t, "runner", 2, 0)
	tt := h.runAll(replicaRuns(t), func(name string) disturbance { return h.sigstop(name, replicaStopLeases*replicaLease) })
	replicaSummary(t, "runner SIGSTOP test", stoppedHow(tt), tt, began)
	tt.check(t, replicaRuns(t))
}

// TestStepperSIGSTOP: the controller path. Two controller replicas without
// leader election each step every job with job.Stepper.Step (Locks: a
// StoreLocker over the shared store); each job is a record of its own,
// persisted by compare-and-swap. The replica that first writes a started
// job is SIGSTOPped for 3 leases, then continued.
func TestStepperSIGSTOP(t *testing.T) {
	if replicaChildRole() {
		return
	}
	if testing.Short() {
		t.Skip("30 runs of two controller replicas, one SIGSTOPped for 3 leases each run; takes minutes")
	}
	began := time.Now()
	h := newReplicaHarness(t, "controller", 2, 0)
	tt := h.runAll(replicaRuns(t), func(name string) disturbance { return h.sigstop(name, replicaStopLeases*replicaLease) })
	replicaSummary(t, "stepper SIGSTOP test", stoppedHow(tt), tt, began)
	tt.check(t, replicaRuns(t))
}

// TestRunnerStoreHang: as TestRunnerSIGSTOP, but instead of a SIGSTOP the
// store calls of the replica that first holds a started job hang (block,
// not fail) for 2 leases. It must send nothing from a lease after the hang
// began until it ended, nor anything for a job another replica took over.
//
// A third of the actions are answered only after 1.2 s (a lease and more),
// as real BMCs now and then take that long to accept a reset: a step that
// sent one just before the hang began must not send its read-back after
// the lease lapsed. (With answers in milliseconds nothing stale is sent
// even without a fence at the request: a Runner whose store hangs starts no
// further step, because its loop waits in the scan, and a step that reaches
// a store write waits there.)
func TestRunnerStoreHang(t *testing.T) {
	if replicaChildRole() {
		return
	}
	if testing.Short() {
		t.Skip("30 runs of two Runner replicas, one's store hanging for 2 leases each run; takes minutes")
	}
	began := time.Now()
	h := newReplicaHarness(t, "runner", 2, replicaHangSlowActions)
	tt := h.runAll(replicaRuns(t), func(name string) disturbance { return h.hang(name, 2*replicaLease) })
	replicaSummary(t, "runner store-hang test", "store hung for 2 leases", tt, began)
	tt.check(t, replicaRuns(t))
}

// replicaChildRole plays the child role this process was started with, if
// any, and reports whether it did.
func replicaChildRole() bool {
	switch {
	case childtest.IsChild("replica-sim"):
		requestLogSimChild()
		return true
	case childtest.IsChild("replica"):
		replicaChild()
		return true
	}
	return false
}

// stoppedHow describes the SIGSTOP runs' stops for the summary.
func stoppedHow(tt *replicaTotals) string {
	return fmt.Sprintf("stopped for %d leases (inside a store transaction in %d runs); takeovers only after the stop ended %d, the latest %v after it began",
		replicaStopLeases, tt.stoppedInTx, tt.takeoversAfterResume, tt.maxTakeoverDelay.Round(time.Millisecond))
}

func replicaSummary(t *testing.T, test, how string, tt *replicaTotals, began time.Time) {
	t.Helper()
	s := fmt.Sprintf("%s: %d runs (%d with a takeover), 2 replicas, %d jobs / %d systems per run, lease %v, %s; "+
		"%d jobs, %d Succeeded; takeovers %d; requests from the disturbed process after the takeover %d, "+
		"in its lapsed-lease window %d (+%d untagged); of these late ones, issued after it resumed or its lease lapsed %d, "+
		"waited for a connection across the lapse %d, in flight at the pause %d; max lateness %s; "+
		"stale from any replica %d (%d state-changing, %d after a completed job was locked again, %d such locks); "+
		"repeated attempts %d, older attempts %d; interleavings %d, reorders %d, re-sent tasks %d; %d requests (%d untagged); %s",
		test, tt.runs, tt.counted, replicaSystems*replicaJobsPerSystem, replicaSystems, replicaLease, how,
		tt.jobs, tt.succeeded, tt.takeovers, tt.staleFromDisturbed,
		tt.inWindow, tt.inWindowUntagged, tt.lateIssued, tt.lateConnWait, tt.lateInFlight, tt.lateness(),
		tt.stale, tt.staleStateChanges, tt.staleRelocked, tt.relocks,
		tt.dupAttempts, tt.oldAttempts, tt.interleavings, tt.reorders, tt.resent, tt.requests, tt.untagged,
		time.Since(began).Round(time.Second))
	t.Log(s)
	fmt.Println(s)
}
