package rollout

import (
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

// State is where one server is in a rollout.
type State byte

// Server states, as stored in Status.States (one byte per server).
const (
	StatePending   State = '.' // not started yet
	StateHeld      State = 'h' // the approval gate refused it; asked again on every pass
	StateRunning   State = 'r' // started: counted unavailable until its job's completion is recorded
	StateSucceeded State = 's'
	StateFailed    State = 'f'
	StateSkipped   State = 'k' // already in the wanted state: no job, nothing sent
)

// String names the state ("pending", "held", ...).
func (s State) String() string {
	switch s {
	case StatePending:
		return "pending"
	case StateHeld:
		return "held"
	case StateRunning:
		return "running"
	case StateSucceeded:
		return "succeeded"
	case StateFailed:
		return "failed"
	case StateSkipped:
		return "skipped"
	}
	return "unknown"
}

func (s State) finished() bool { return s == StateSucceeded || s == StateFailed || s == StateSkipped }

// Result is a completed rollout's outcome (empty until Completed=True).
type Result string

// Results (docs/rollouts.md, "Status and conditions").
const (
	ResultSucceeded Result = "Succeeded" // every server succeeded or was skipped
	ResultFailed    Result = "Failed"    // every server was tried; some failed within the budget
	ResultHalted    Result = "Halted"    // the failure budget was spent, or a canary server failed
	ResultAborted   Result = "Aborted"   // Abort was called
)

// Condition types besides conditions.TypeCompleted and TypeRunning.
const (
	// TypePaused is True while the rollout is paused.
	TypePaused = "Paused"
)

// Reasons of the rollout's conditions.
const (
	ReasonCanary             = "Canary"
	ReasonAwaitingApproval   = "AwaitingCanaryApproval"
	ReasonRolling            = "Rolling"
	ReasonPaused             = "Paused"
	ReasonResumed            = "Resumed"
	ReasonHalting            = "Halting"
	ReasonAborting           = "Aborting"
	ReasonBudgetSpent        = "FailureBudgetSpent"
	ReasonCanaryFailed       = "CanaryFailed"
	ReasonAborted            = "Aborted"
	ReasonAllSucceeded       = "Succeeded"
	ReasonFailedWithinBudget = "FailedWithinBudget"
)

// Control is what a user asks of a running rollout.
type Control struct {
	Paused         bool `json:"paused,omitempty"`
	Aborted        bool `json:"aborted,omitempty"`
	CanaryApproved bool `json:"canaryApproved,omitempty"`
}

// Status is a rollout's observed state.
type Status struct {
	// Conditions: Completed, Running and Paused.
	Conditions []conditions.Condition `json:"conditions,omitempty"`
	// Result is empty until Completed=True, then with Reason and Message.
	Result  Result `json:"result,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// States holds one State per server, in the spec's order.
	States string `json:"states"`
	// Counts are the servers in each state.
	Counts Counts `json:"counts"`
	// Canary is the canary's progress.
	Canary CanaryStatus `json:"canary,omitzero"`
	// FailureBudget is how many failures the rollout tolerates;
	// FailureBudgetLeft how many more it still does (negative: spent).
	FailureBudget     int `json:"failureBudget"`
	FailureBudgetLeft int `json:"failureBudgetLeft"`
	// Halt is set once no server may start any more (budget spent, canary
	// failed, aborted): the reason, and the message.
	Halt string `json:"halt,omitempty"`
	// Failures are the failed servers, the first MaxFailures.
	Failures []Failure `json:"failures,omitempty"`
	// Running lists the servers counted unavailable, with when they
	// started.
	Running []RunningServer `json:"running,omitempty"`
	// JobSeconds is the summed run time of the jobs that finished (from the
	// write that started their server to their completion), JobsTimed how
	// many: the mean job time behind Estimate.
	JobSeconds float64 `json:"jobSeconds,omitempty"`
	JobsTimed  int     `json:"jobsTimed,omitempty"`
	// Estimate is the estimated time left (remaining servers over the
	// policy's maxUnavailable, times the mean job time), once a job finished.
	Estimate string `json:"estimate,omitempty"`
	// StartTime is the rollout's first pass, CompletionTime its completion.
	StartTime      *timestamp.Time `json:"startTime,omitempty"`
	CompletionTime *timestamp.Time `json:"completionTime,omitempty"`
}

// MaxFailures is how many failures Status.Failures keeps (the count is in
// Counts.Failed).
const MaxFailures = 100

// Counts are the servers in each state.
type Counts struct {
	Pending   int `json:"pending"`
	Held      int `json:"held"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

// CanaryStatus is the canary's progress: Size servers must succeed.
type CanaryStatus struct {
	Size      int `json:"size,omitempty"`
	Succeeded int `json:"succeeded,omitempty"`
	Failed    int `json:"failed,omitempty"`
	// Result: "" while it runs, Succeeded or Failed.
	Result Result `json:"result,omitempty"`
	// Servers are the canary servers' indices.
	Servers []int `json:"servers,omitempty"`
}

// Failure is one failed server.
type Failure struct {
	Server  string `json:"server"`
	Job     string `json:"job"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// RunningServer is a server counted unavailable.
type RunningServer struct {
	Index int            `json:"index"`
	Since timestamp.Time `json:"since"`
}

// Completed reports whether the rollout reached its end.
func (s *Status) Completed() bool { return conditions.IsTrue(s.Conditions, conditions.TypeCompleted) }

// State is server i's state.
func (s *Status) State(i int) State {
	if i < 0 || i >= len(s.States) {
		return 0
	}
	return State(s.States[i])
}

// count recomputes Counts from States.
func (s *Status) count() {
	var c Counts
	for i := 0; i < len(s.States); i++ {
		switch State(s.States[i]) {
		case StatePending:
			c.Pending++
		case StateHeld:
			c.Held++
		case StateRunning:
			c.Running++
		case StateSucceeded:
			c.Succeeded++
		case StateFailed:
			c.Failed++
		case StateSkipped:
			c.Skipped++
		}
	}
	s.Counts = c
}

// MeanJobTime is the mean run time of the jobs that finished (0: none yet).
func (s *Status) MeanJobTime() time.Duration {
	if s.JobsTimed == 0 {
		return 0
	}
	return time.Duration(s.JobSeconds / float64(s.JobsTimed) * float64(time.Second))
}
