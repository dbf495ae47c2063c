package bootstate

import (
	"context"
	"errors"
	"time"

	"github.com/bmckit/bmckit/conditions"
)

// JobAttemptPolicy is the job package's BootAttemptPolicy: both are aliases
// of this unnamed struct type, so [Tracker.StartBootWithPolicy] implements
// job.BootPolicyStarter without bootstate importing job. Keep the two
// declarations identical (the compiler checks it wherever both packages
// meet, e.g. examples/bootserver).
type JobAttemptPolicy = struct {
	Timeout        time.Duration
	Mode           string
	Signals        []string
	Deadlines      []JobSignalDeadline
	AllowedSources []string
}

// JobSignalDeadline is the job package's BootSignalDeadline.
type JobSignalDeadline = struct {
	Signal             string
	Within             time.Duration
	FromPreviousSignal bool
}

// JobBootOutcome is the job package's BootOutcome.
type JobBootOutcome = struct {
	Done    bool
	Result  conditions.Result
	Reason  string
	Message string
}

// StartBootWithPolicy opens an attempt with a per-attempt policy; it
// implements the job package's BootPolicyStarter and behaves like
// [Tracker.StartBoot] otherwise (a retired attempt is not an error).
func (t *Tracker) StartBootWithPolicy(ctx context.Context, systemUUID, attemptID string, p JobAttemptPolicy) error {
	pol := Policy{Mode: PolicyMode(p.Mode), Signals: p.Signals}
	for _, d := range p.Deadlines {
		from := FromAttemptStart
		if d.FromPreviousSignal {
			from = FromPreviousSignal
		}
		pol.Deadlines = append(pol.Deadlines, SignalDeadline{Signal: d.Signal, Within: d.Within, From: from})
	}
	_, err := t.Start(ctx, StartOptions{SystemUUID: systemUUID, AttemptID: attemptID, Timeout: p.Timeout, Policy: pol, AllowedSources: p.AllowedSources})
	if errors.Is(err, ErrStaleAttempt) {
		return nil
	}
	return err
}

// BootOutcome is [Tracker.BootResult] with the Completed reason (Booted,
// TimedOut, or a stage timeout such as IPXETimeout); it implements the job
// package's BootOutcomeReporter.
func (t *Tracker) BootOutcome(ctx context.Context, systemUUID, attemptID string) (JobBootOutcome, error) {
	done, res, msg, err := t.BootResult(ctx, systemUUID, attemptID)
	if err != nil || !done {
		return JobBootOutcome{Done: done, Message: msg}, err
	}
	out := JobBootOutcome{Done: true, Result: res, Message: msg, Reason: string(res)}
	if rec, err := t.Get(ctx, systemUUID); err == nil && rec.AttemptID == attemptID && rec.Reason() != "" {
		out.Reason = rec.Reason()
	} else if res == conditions.ResultCanceled {
		out.Reason = ReasonSuperseded
	}
	return out, nil
}
