package bootstate

import (
	"fmt"
	"strings"

	"github.com/bmckit/bmckit/conditions"
)

// Standard signals. Each is recorded as a condition of that type (status
// True) on the boot record. Hosts may define their own signal names.
const (
	// SignalIPXEScriptFetched: the server fetched its iPXE script (recorded
	// by [Tracker.FetchMiddleware] around the host's iPXE handler).
	SignalIPXEScriptFetched = "IPXEScriptFetched"
	// SignalIgnitionDataFetched: the server fetched its Ignition (or other
	// provisioning) config.
	SignalIgnitionDataFetched = "IgnitionDataFetched"
	// SignalBootStateReceived: the booted operating system posted to the
	// /bootstate endpoint ([Handler]).
	SignalBootStateReceived = "BootStateReceived"
)

// Reasons on signal conditions and on the record's Completed condition.
const (
	// ReasonSignalReceived is the reason of every signal condition.
	ReasonSignalReceived = "SignalReceived"
	// ReasonBooted: Completed=True with result Succeeded.
	ReasonBooted = "Booted"
	// ReasonSuperseded: the attempt was replaced by a newer one before it
	// completed; its result is Canceled.
	ReasonSuperseded = "Superseded"
)

// PolicyMode says how a [Policy]'s signals combine.
type PolicyMode string

// Policy modes.
const (
	// AllOf: the boot completed once every listed signal was received.
	AllOf PolicyMode = "AllOf"
	// AnyOf: the boot completed once any listed signal was received.
	AnyOf PolicyMode = "AnyOf"
)

// Policy says which signals mean "boot completed". A NetBootOnce-style boot
// (the server netboots once, installs, then boots from disk) typically waits
// for AllOf(BootStateReceived) or AllOf(IgnitionDataFetched,
// BootStateReceived); a NetBootAlways-style boot, whose OS posts nothing,
// may count AnyOf(IPXEScriptFetched, BootStateReceived).
//
// The zero Policy means the tracker's default.
type Policy struct {
	// Mode is AllOf or AnyOf. Defaults to AllOf.
	Mode PolicyMode `json:"mode,omitempty"`
	// Signals are the signal names the policy waits for.
	Signals []string `json:"signals,omitempty"`
	// Deadlines bound single signals (boot stages), each measured from the
	// attempt's start or from the previous entry's signal; an attempt
	// whose stage deadline passes times out with that stage's reason (see
	// [ReasonStageTimeout]). The attempt's overall deadline still applies.
	// Defaults to none.
	Deadlines []SignalDeadline `json:"deadlines,omitempty"`
}

// AllOfSignals returns a Policy that completes once every signal was received.
func AllOfSignals(signals ...string) Policy { return Policy{Mode: AllOf, Signals: signals} }

// AnyOfSignals returns a Policy that completes once any signal was received.
func AnyOfSignals(signals ...string) Policy { return Policy{Mode: AnyOf, Signals: signals} }

// IsZero reports whether p is the zero Policy (use the default).
func (p Policy) IsZero() bool {
	return p.Mode == "" && len(p.Signals) == 0 && len(p.Deadlines) == 0
}

// Validate checks the mode and every signal name.
func (p Policy) Validate() error {
	switch p.Mode {
	case "", AllOf, AnyOf:
	default:
		return fmt.Errorf("policy mode %s: want %q or %q", quoteTrunc(string(p.Mode)), AllOf, AnyOf)
	}
	if len(p.Signals) == 0 {
		return fmt.Errorf("policy: no signals listed; name at least one, e.g. %q", SignalBootStateReceived)
	}
	for _, s := range p.Signals {
		if err := ValidateSignal(s); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
	}
	return validateDeadlines(p.Deadlines)
}

// Satisfied reports whether the signals recorded in conds satisfy p.
func (p Policy) Satisfied(conds []conditions.Condition) bool {
	if len(p.Signals) == 0 {
		return false
	}
	for _, s := range p.Signals {
		got := conditions.IsTrue(conds, s)
		if p.Mode == AnyOf && got {
			return true
		}
		if p.Mode != AnyOf && !got {
			return false
		}
	}
	return p.Mode != AnyOf
}

// String renders p as e.g. "AllOf(IPXEScriptFetched, BootStateReceived)".
func (p Policy) String() string {
	m := p.Mode
	if m == "" {
		m = AllOf
	}
	return fmt.Sprintf("%s(%s)", m, strings.Join(p.Signals, ", "))
}

// ValidateSignal checks a signal name: CamelCase letters and digits starting
// with a letter, at most 63 bytes, and not one of the record's own condition
// types (Completed, Running).
func ValidateSignal(s string) error {
	if s == "" {
		return fmt.Errorf("signal name is empty")
	}
	if len(s) > 63 {
		return fmt.Errorf("signal %s: longer than 63 bytes", quoteTrunc(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && !(i > 0 && '0' <= c && c <= '9') {
			return fmt.Errorf("signal %s: want CamelCase letters and digits starting with a letter", quoteTrunc(s))
		}
	}
	if s == conditions.TypeCompleted || s == conditions.TypeRunning {
		return fmt.Errorf("signal %q: reserved for the boot record's own state", s)
	}
	return nil
}
