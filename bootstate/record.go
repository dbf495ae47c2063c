package bootstate

import (
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/conditions"
)

// Record is the boot record of one system: its current boot attempt, the
// signals received for it (as conditions), and the outcome. It is stored as
// JSON under the tracker's key prefix plus the lower-case system UUID, one
// key per system, so starting a new attempt and retiring the previous one is
// a single compare-and-swap.
//
// Records never hold tokens or the secret: a token is recomputed from the
// secret when a request presents one.
type Record struct {
	// SystemUUID is the lower-case system UUID.
	SystemUUID string `json:"systemUUID"`
	// AttemptID names the current boot attempt (chosen by the host or job).
	AttemptID string `json:"attemptID"`
	// Policy decides when the attempt counts as booted.
	Policy Policy `json:"policy"`
	// StartedAt is when the attempt was opened.
	StartedAt time.Time `json:"startedAt"`
	// Deadline is when the attempt times out unless completed before
	// (Policy.Deadlines may end it earlier, per stage; see NextDeadline).
	Deadline time.Time `json:"deadline"`
	// AllowedSources are the addresses (IPs or CIDR prefixes, normalized)
	// the machine may fetch and call back from; empty: any address.
	AllowedSources []string `json:"allowedSources,omitempty"`
	// TimedOutStage is the signal whose own deadline ended the attempt, if
	// one did (empty when the overall deadline did, or it did not time out).
	TimedOutStage string `json:"timedOutStage,omitempty"`
	// Conditions holds Completed and Running (kept consistent by the
	// conditions helpers) and one condition per signal received.
	Conditions []conditions.Condition `json:"conditions,omitempty"`
	// Result is empty until Completed is True, then Succeeded, TimedOut or
	// Canceled (superseded by a newer attempt).
	Result conditions.Result `json:"result,omitempty"`
	// Previous holds the outcomes of the most recent earlier attempts,
	// newest first, so a job still asking about an attempt that another one
	// replaced gets a clear answer.
	Previous []PreviousAttempt `json:"previous,omitempty"`

	// Revision is the store revision the record was read at (not stored).
	Revision int64 `json:"-"`
}

// PreviousAttempt is the outcome of an earlier attempt of the same system.
type PreviousAttempt struct {
	AttemptID string            `json:"attemptID"`
	StartedAt time.Time         `json:"startedAt"`
	Result    conditions.Result `json:"result"`
	Message   string            `json:"message,omitempty"`
}

// Completed reports whether the attempt reached a terminal state.
func (r *Record) Completed() bool {
	return conditions.IsTrue(r.Conditions, conditions.TypeCompleted)
}

// Message returns the Completed condition's message: why the attempt is
// still waiting, or how it ended.
func (r *Record) Message() string {
	if c := conditions.Get(r.Conditions, conditions.TypeCompleted); c != nil {
		return c.Message
	}
	return ""
}

// Reason returns the Completed condition's reason: Booted, TimedOut, a
// stage timeout such as IPXETimeout, Superseded; empty while waiting.
func (r *Record) Reason() string {
	if c := conditions.Get(r.Conditions, conditions.TypeCompleted); c != nil && c.Status == conditions.True {
		return c.Reason
	}
	return ""
}

// HasSignal reports whether the signal was received for the current attempt.
func (r *Record) HasSignal(signal string) bool {
	return conditions.IsTrue(r.Conditions, signal)
}

// previous returns the earlier attempt of that ID, if remembered.
func (r *Record) previous(attemptID string) (PreviousAttempt, bool) {
	for _, p := range r.Previous {
		if p.AttemptID == attemptID {
			return p, true
		}
	}
	return PreviousAttempt{}, false
}

// receivedSignals lists the signals received, in the order they arrived.
func (r *Record) receivedSignals() []string {
	var out []string
	for _, c := range r.Conditions {
		if c.Type != conditions.TypeCompleted && c.Type != conditions.TypeRunning && c.Status == conditions.True {
			out = append(out, c.Type)
		}
	}
	return out
}

// waitingMessage says what the attempt is waiting for.
func (r *Record) waitingMessage() string {
	got := r.receivedSignals()
	if len(got) == 0 {
		return fmt.Sprintf("waiting for %s; nothing received yet", r.Policy)
	}
	return fmt.Sprintf("waiting for %s; received %s", r.Policy, strings.Join(got, ", "))
}

// evaluate completes the attempt when the policy is met or the deadline
// passed, and reports whether it changed anything and whether the change was
// a timeout. The deadline wins: a signal that arrives after it is recorded
// but does not turn a timed-out attempt into a success.
func (r *Record) evaluate(now time.Time) (changed, timedOut bool) {
	if r.Completed() {
		return false, false
	}
	if due, ok := r.passedDeadline(now); ok {
		r.Result = conditions.ResultTimedOut
		reason := conditions.ReasonTimedOut
		var msg string
		if due.signal == "" {
			msg = fmt.Sprintf("boot attempt %q timed out after %s (started %s, deadline %s) %s",
				r.AttemptID, r.Deadline.Sub(r.StartedAt), stamp(r.StartedAt), stamp(r.Deadline), r.waitingMessage())
		} else {
			reason = ReasonStageTimeout(due.signal)
			r.TimedOutStage = due.signal
			from := "the attempt's start"
			if due.d.From == FromPreviousSignal {
				from = "its previous stage (" + r.Policy.Deadlines[indexOfDeadline(r.Policy.Deadlines, due.signal)-1].Signal + ")"
			}
			msg = fmt.Sprintf("boot attempt %q timed out at stage %s: not received within %s of %s (started %s, stage base %s, due %s, noticed %s) %s",
				r.AttemptID, due.signal, due.d.Within, from, stamp(r.StartedAt), stamp(due.base), stamp(due.at), stamp(now), r.waitingMessage())
		}
		conditions.MarkCompleted(&r.Conditions, 0, conditions.ResultTimedOut, reason, msg, now)
		return true, true
	}
	if r.Policy.Satisfied(r.Conditions) {
		r.Result = conditions.ResultSucceeded
		msg := fmt.Sprintf("boot attempt %q completed: %s met (received %s)",
			r.AttemptID, r.Policy, strings.Join(r.receivedSignals(), ", "))
		conditions.MarkCompleted(&r.Conditions, 0, conditions.ResultSucceeded, ReasonBooted, msg, now)
		return true, false
	}
	return conditions.MarkRunning(&r.Conditions, 0, r.waitingMessage(), now), false
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func indexOfDeadline(ds []SignalDeadline, signal string) int {
	for i, d := range ds {
		if d.Signal == signal {
			return i
		}
	}
	return -1
}
