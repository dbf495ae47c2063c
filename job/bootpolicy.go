package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/conditions"
)

// BootAttemptPolicy is the per-attempt policy a wait-for-boot task hands
// its BootTracker through [BootPolicyStarter]. It is an alias of an unnamed
// struct type, so package bootstate can name the identical type
// (bootstate.JobAttemptPolicy) and implement BootPolicyStarter without
// importing job. Zero fields mean the tracker's defaults.
type BootAttemptPolicy = struct {
	// Timeout is the attempt's overall deadline (zero: the tracker's default).
	Timeout time.Duration
	// Mode is "AllOf", "AnyOf" or "" (AllOf).
	Mode string
	// Signals count as booted (none: the tracker's default policy).
	Signals []string
	// Deadlines bound single signals (boot stages).
	Deadlines []BootSignalDeadline
	// AllowedSources are IPs or CIDR prefixes the machine may call from.
	AllowedSources []string
}

// BootSignalDeadline bounds one signal of an attempt: it is due Within of
// the attempt's start or, with FromPreviousSignal, of the previous entry's
// signal. An alias of an unnamed struct, like [BootAttemptPolicy].
type BootSignalDeadline = struct {
	Signal             string
	Within             time.Duration
	FromPreviousSignal bool
}

// BootPolicyStarter is an optional interface of a [BootTracker]: it opens an
// attempt with a per-attempt policy. A wait-for-boot task whose spec carries
// a policy (signals, deadlines, allowed sources) needs it; with a tracker
// that lacks it, such a job fails with reason NotSupported rather than run
// with the policy silently dropped. Must be idempotent, like StartBoot.
type BootPolicyStarter interface {
	StartBootWithPolicy(ctx context.Context, systemUUID, attemptID string, policy BootAttemptPolicy) error
}

// BootOutcome is what [BootOutcomeReporter] says about an attempt. An alias
// of an unnamed struct, like [BootAttemptPolicy].
type BootOutcome = struct {
	// Done is false while the attempt waits.
	Done bool
	// Result is Succeeded, TimedOut, Canceled or Failed once Done.
	Result conditions.Result
	// Reason says why: e.g. Booted, TimedOut, or the stage that timed out
	// (IPXETimeout, IgnitionTimeout, BootStateTimeout).
	Reason string
	// Message says what happened, with times.
	Message string
}

// BootOutcomeReporter is an optional interface of a [BootTracker]: like
// BootResult, with the reason, so a failed wait-for-boot task names the
// stage that timed out. Without it the reason is the result (TimedOut).
type BootOutcomeReporter interface {
	BootOutcome(ctx context.Context, systemUUID, attemptID string) (BootOutcome, error)
}

// BootTryAttemptID is the boot attempt of try (1, 2, ...) of wait-for-boot
// task taskIndex of j: try 1 is BootAttemptID(j, taskIndex), retry n adds
// ".try<n>". Hosts that embed boot tokens compute them from the current
// attempt (the tracker's record names it).
func BootTryAttemptID(j *Job, taskIndex, try int) string {
	if try <= 1 {
		return BootAttemptID(j, taskIndex)
	}
	return fmt.Sprintf("%s.try%d", BootAttemptID(j, taskIndex), try)
}

// BootAttemptID is the boot attempt that wait-for-boot task taskIndex of j
// waits for. Hosts that embed boot tokens in the iPXE script or Ignition they
// serve compute the token from it (see package bootstate).
//
// Each wait-for-boot task has its own attempt, opened when the job starts
// (the first) or when the previous wait-for-boot task completed (the next),
// before the tasks that power the server on, so a callback from an earlier
// boot cannot complete a later wait.
func BootAttemptID(j *Job, taskIndex int) string {
	return fmt.Sprintf("%s.%d.%d.%d", j.Name, j.CreatedAt.UnixNano(), j.Generation, taskIndex)
}
