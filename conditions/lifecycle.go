package conditions

import (
	"time"

	"github.com/bmckit/bmckit/timestamp"
)

// Standard condition types for jobs, tasks and boot records.
const (
	// TypeCompleted is True once the object reached a terminal state, whatever
	// the outcome. Read the outcome from the object's Result, not from another
	// condition.
	TypeCompleted = "Completed"
	// TypeRunning is a progress condition: True while work is in flight, False
	// before it starts and after it completes. The helpers in this package keep
	// it consistent with Completed: a completed object never has Running=True.
	TypeRunning = "Running"
)

// Result is the outcome of a completed job, task or boot record. It is empty
// until Completed is True.
//
// +kubebuilder:validation:Enum=Succeeded;Failed;Canceled;TimedOut
type Result string

// Results.
const (
	ResultSucceeded Result = "Succeeded"
	ResultFailed    Result = "Failed"
	ResultCanceled  Result = "Canceled"
	// ResultTimedOut is used by boot records whose policy deadline passed.
	ResultTimedOut Result = "TimedOut"
)

// Standard reasons.
const (
	ReasonPending   = "Pending"
	ReasonRunning   = "Running"
	ReasonSucceeded = "Succeeded"
	ReasonFailed    = "Failed"
	ReasonCanceled  = "Canceled"
	ReasonTimedOut  = "TimedOut"
	// ReasonSkipped: a task never ran (or was interrupted) because an earlier
	// task failed or the job was canceled; its result is Canceled.
	ReasonSkipped = "Skipped"
	// ReasonWaiting: a job waits for its system, held by another job.
	ReasonWaiting = "Waiting"
	// ReasonBMCError: the BMC answered with an error, or could not be reached.
	ReasonBMCError = "BMCError"
	// ReasonInvalidSpec: the spec did not validate.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonUnauthorized: the BMC refused the credentials.
	ReasonUnauthorized = "Unauthorized"
	// ReasonNotSupported: the BMC does not offer the action.
	ReasonNotSupported = "NotSupported"
	// ReasonVerificationFailed: the action was accepted but its effect was never observed.
	ReasonVerificationFailed = "VerificationFailed"
	// ReasonResetRequired: a firmware update needs a reset to take effect
	// and its task was told not to do it (task.FirmwareResetNone).
	ReasonResetRequired = "ResetRequired"
	// ReasonFirmwareStartUnknown: a firmware update's start got no answer
	// and the BMC cannot show whether it started (it lists no update
	// tasks), so it was not sent again.
	ReasonFirmwareStartUnknown = "FirmwareStartUnknown"
)

// MessagePending is the message MarkPending sets.
const MessagePending = "waiting to start"

// MarkPending sets Completed=False and Running=False with reason Pending.
func MarkPending(conds *[]Condition, generation int64, now time.Time) bool {
	a := Set(conds, Condition{Type: TypeCompleted, Status: False, Reason: ReasonPending, Message: MessagePending, ObservedGeneration: generation, LastTransitionTime: timestamp.New(now)})
	b := Set(conds, Condition{Type: TypeRunning, Status: False, Reason: ReasonPending, Message: MessagePending, ObservedGeneration: generation, LastTransitionTime: timestamp.New(now)})
	return a || b
}

// MarkRunning sets Running=True and Completed=False with the given message.
func MarkRunning(conds *[]Condition, generation int64, message string, now time.Time) bool {
	a := Set(conds, Condition{Type: TypeCompleted, Status: False, Reason: ReasonRunning, Message: message, ObservedGeneration: generation, LastTransitionTime: timestamp.New(now)})
	b := Set(conds, Condition{Type: TypeRunning, Status: True, Reason: ReasonRunning, Message: message, ObservedGeneration: generation, LastTransitionTime: timestamp.New(now)})
	return a || b
}

// MarkCompleted sets Completed=True and Running=False, both carrying the
// given reason and message. The result itself is stored by the caller in its
// Result field; reason defaults to the result's name.
func MarkCompleted(conds *[]Condition, generation int64, result Result, reason, message string, now time.Time) bool {
	if reason == "" {
		reason = string(result)
	}
	a := Set(conds, Condition{Type: TypeCompleted, Status: True, Reason: reason, Message: message, ObservedGeneration: generation, LastTransitionTime: timestamp.New(now)})
	b := Set(conds, Condition{Type: TypeRunning, Status: False, Reason: reason, Message: message, ObservedGeneration: generation, LastTransitionTime: timestamp.New(now)})
	return a || b
}
