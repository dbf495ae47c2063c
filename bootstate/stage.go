package bootstate

import (
	"fmt"
	"time"
)

// DeadlineFrom says what a [SignalDeadline] is measured from.
type DeadlineFrom string

// Bases of a [SignalDeadline].
const (
	// FromAttemptStart: the signal is due Within of the attempt's start
	// (for the first stage, typically the power-on). The default.
	FromAttemptStart DeadlineFrom = "AttemptStart"
	// FromPreviousSignal: the signal is due Within of the time the previous
	// entry of Policy.Deadlines was received. Until that one arrives, this
	// deadline is not armed (the previous stage's own deadline, or the
	// attempt's, covers the wait).
	FromPreviousSignal DeadlineFrom = "PreviousSignal"
)

// Timeout reasons of the stages the standard signals mark, set on the
// Completed condition of an attempt whose stage deadline passed.
// ReasonStageTimeout gives the reason of any signal.
const (
	// ReasonIPXETimeout: the iPXE script was not fetched in time (no
	// DHCP/PXE, or the server never powered on).
	ReasonIPXETimeout = "IPXETimeout"
	// ReasonIgnitionTimeout: the Ignition (provisioning) config was not
	// fetched in time (the kernel/initrd did not come up).
	ReasonIgnitionTimeout = "IgnitionTimeout"
	// ReasonBootStateTimeout: the booted OS did not post /bootstate in time.
	ReasonBootStateTimeout = "BootStateTimeout"
)

// ReasonStageTimeout is the Completed reason of an attempt whose deadline
// for signal passed: ReasonIPXETimeout, ReasonIgnitionTimeout and
// ReasonBootStateTimeout for the standard signals, signal+"Timeout" for a
// host's own signal. (The attempt's overall deadline has reason TimedOut.)
func ReasonStageTimeout(signal string) string {
	switch signal {
	case SignalIPXEScriptFetched:
		return ReasonIPXETimeout
	case SignalIgnitionDataFetched:
		return ReasonIgnitionTimeout
	case SignalBootStateReceived:
		return ReasonBootStateTimeout
	}
	return signal + "Timeout"
}

// SignalDeadline bounds one signal of an attempt (one boot stage).
type SignalDeadline struct {
	// Signal is the signal the stage waits for, e.g. IPXEScriptFetched. It
	// need not be one of the policy's completion signals: a stage may be
	// bounded without being required.
	Signal string `json:"signal"`
	// Within is how long the signal may take (stored in nanoseconds).
	Within time.Duration `json:"within"`
	// From is FromAttemptStart (the default) or FromPreviousSignal.
	From DeadlineFrom `json:"from,omitempty"`
}

// validateDeadlines checks a policy's per-signal deadlines.
func validateDeadlines(ds []SignalDeadline) error {
	seen := map[string]bool{}
	for i, d := range ds {
		if err := ValidateSignal(d.Signal); err != nil {
			return fmt.Errorf("policy deadline %d: %w", i, err)
		}
		if seen[d.Signal] {
			return fmt.Errorf("policy deadline %d: signal %q bounded twice", i, d.Signal)
		}
		seen[d.Signal] = true
		if d.Within <= 0 {
			return fmt.Errorf("policy deadline %d (%s): within must be positive, got %s", i, d.Signal, d.Within)
		}
		switch d.From {
		case "", FromAttemptStart:
		case FromPreviousSignal:
			if i == 0 {
				return fmt.Errorf("policy deadline 0 (%s): from %q needs a previous deadline entry; use %q", d.Signal, FromPreviousSignal, FromAttemptStart)
			}
		default:
			return fmt.Errorf("policy deadline %d (%s): from %s: want %q or %q", i, d.Signal, quoteTrunc(string(d.From)), FromAttemptStart, FromPreviousSignal)
		}
	}
	return nil
}

// stageDue is one armed deadline of an attempt.
type stageDue struct {
	signal string // "" for the attempt's overall deadline
	at     time.Time
	base   time.Time
	d      SignalDeadline
}

// armedDeadlines lists the deadlines of an open attempt that can still fire:
// the overall one and each stage whose signal has not arrived and whose
// base is known.
func (r *Record) armedDeadlines() []stageDue {
	out := []stageDue{{at: r.Deadline, base: r.StartedAt}}
	for i, d := range r.Policy.Deadlines {
		if r.HasSignal(d.Signal) {
			continue
		}
		base := r.StartedAt
		if d.From == FromPreviousSignal {
			prev := r.Policy.Deadlines[i-1].Signal
			if !r.HasSignal(prev) {
				continue
			}
			base = r.signalTime(prev)
		}
		out = append(out, stageDue{signal: d.Signal, at: base.Add(d.Within), base: base, d: d})
	}
	return out
}

// NextDeadline is the earliest time the open attempt can time out: its
// overall deadline or an armed per-signal deadline.
func (r *Record) NextDeadline() time.Time {
	next := r.Deadline
	for _, s := range r.armedDeadlines() {
		if s.at.Before(next) {
			next = s.at
		}
	}
	return next
}

// passedDeadline returns the earliest armed deadline at or before now.
func (r *Record) passedDeadline(now time.Time) (stageDue, bool) {
	var best stageDue
	found := false
	for _, s := range r.armedDeadlines() {
		if now.Before(s.at) {
			continue
		}
		if !found || s.at.Before(best.at) {
			best, found = s, true
		}
	}
	return best, found
}

// signalTime is when a received signal arrived.
func (r *Record) signalTime(signal string) time.Time {
	for _, c := range r.Conditions {
		if c.Type == signal {
			return c.LastTransitionTime.Time
		}
	}
	return r.StartedAt
}
