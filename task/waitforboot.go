package task

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

// BootPolicyMode says how a wait-for-boot task's signals combine.
//
// +kubebuilder:validation:Enum=AllOf;AnyOf
type BootPolicyMode string

// Boot policy modes (the same names as package bootstate's).
const (
	BootAllOf BootPolicyMode = "AllOf"
	BootAnyOf BootPolicyMode = "AnyOf"
)

// DeadlineFrom is what a [SignalDeadline] is measured from.
//
// +kubebuilder:validation:Enum=AttemptStart;PreviousSignal
type DeadlineFrom string

// Bases of a [SignalDeadline].
const (
	DeadlineFromAttemptStart   DeadlineFrom = "AttemptStart"
	DeadlineFromPreviousSignal DeadlineFrom = "PreviousSignal"
)

// SignalDeadline bounds one boot signal (stage) of each attempt, e.g.
// {"signal": "IPXEScriptFetched", "within": "5m"}.
type SignalDeadline struct {
	// Signal is a signal name such as IPXEScriptFetched,
	// IgnitionDataFetched or BootStateReceived.
	//
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9]{0,62}$`
	Signal string `json:"signal"`
	// Within is how long the signal may take.
	Within Duration `json:"within"`
	// From is "AttemptStart" (the default) or "PreviousSignal": the
	// previous entry's signal.
	From DeadlineFrom `json:"from,omitempty"`
}

// Limits of a [WaitForBootPolicy].
const (
	MaxBootRetries      = 10
	MaxBootRetryBackoff = time.Hour
)

// WaitForBootPolicy is the per-attempt boot policy a wait-for-boot task
// carries (inline in [WaitForBootAction]'s JSON). Every field is optional;
// the zero value is the tracker's defaults and no retries.
type WaitForBootPolicy struct {
	// Mode is "AllOf" (the default) or "AnyOf" over Signals.
	Mode BootPolicyMode `json:"mode,omitempty"`
	// Signals count as booted. Defaults to the tracker's default policy.
	//
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z][A-Za-z0-9]{0,62}$`
	Signals []string `json:"signals,omitempty"`
	// Deadlines bound single signals (stages) of each attempt; an attempt
	// whose stage deadline passes times out with a reason naming the stage
	// (IPXETimeout, IgnitionTimeout, BootStateTimeout).
	Deadlines []SignalDeadline `json:"deadlines,omitempty"`
	// AllowedSources are the addresses (IPs or CIDR prefixes) the machine
	// may fetch and call back from; other addresses get 403.
	//
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	AllowedSources []string `json:"allowedSources,omitempty"`
	// Retries is how many more tries follow a try that timed out: each
	// sets the boot override again (the most recent bootDevice task
	// before this one in the job, if any), power cycles the server and
	// waits for a new attempt. 0 to 10; defaults to 0.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Retries int `json:"retries,omitempty"`
	// RetryBackoff is the wait before the first retry, doubling for each
	// further one. Defaults to 10s; at most 1h.
	RetryBackoff Duration `json:"retryBackoff,omitzero"`
}

// IsZero reports whether the policy leaves everything to the tracker's
// defaults and asks for no retries.
func (p *WaitForBootPolicy) IsZero() bool {
	return p.Mode == "" && len(p.Signals) == 0 && len(p.Deadlines) == 0 && len(p.AllowedSources) == 0 && p.Retries == 0 && p.RetryBackoff.Duration == 0
}

// TrackerPolicy reports whether the policy has anything for the tracker
// (mode, signals, deadlines or sources), beyond retries.
func (p *WaitForBootPolicy) TrackerPolicy() bool {
	return p.Mode != "" || len(p.Signals) > 0 || len(p.Deadlines) > 0 || len(p.AllowedSources) > 0
}

// BackoffBefore is the wait before try (2 for the first retry).
func (p *WaitForBootPolicy) BackoffBefore(try int) time.Duration {
	d := p.RetryBackoff.Duration
	if d <= 0 {
		d = 10 * time.Second
	}
	for n := 2; n < try && d < MaxBootRetryBackoff; n++ {
		d *= 2
	}
	return min(d, MaxBootRetryBackoff)
}

func (a *WaitForBootAction) validatePolicy() error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Path: "waitForBoot." + field, Msg: fmt.Sprintf(format, args...)}
	}
	p := &a.WaitForBootPolicy
	switch p.Mode {
	case "", BootAllOf, BootAnyOf:
	default:
		return bad("mode", "%q is not one of AllOf, AnyOf", truncate(string(p.Mode), 40))
	}
	if p.Mode != "" && len(p.Signals) == 0 {
		return bad("signals", "mode is set but no signals are listed")
	}
	for i, s := range p.Signals {
		if err := validSignal(s); err != "" {
			return bad(fmt.Sprintf("signals[%d]", i), "%s", err)
		}
	}
	seen := map[string]bool{}
	for i, d := range p.Deadlines {
		f := fmt.Sprintf("deadlines[%d]", i)
		if err := validSignal(d.Signal); err != "" {
			return bad(f+".signal", "%s", err)
		}
		if seen[d.Signal] {
			return bad(f+".signal", "%q is bounded twice", d.Signal)
		}
		seen[d.Signal] = true
		if d.Within.Duration <= 0 || d.Within.Duration > 7*24*time.Hour {
			return bad(f+".within", "%s: want a positive duration of at most 7 days", d.Within.Duration)
		}
		switch d.From {
		case "", DeadlineFromAttemptStart:
		case DeadlineFromPreviousSignal:
			if i == 0 {
				return bad(f+".from", "PreviousSignal needs a previous entry; use AttemptStart for the first")
			}
		default:
			return bad(f+".from", "%q is not one of AttemptStart, PreviousSignal", truncate(string(d.From), 40))
		}
	}
	if len(p.AllowedSources) > 64 {
		return bad("allowedSources", "%d entries, at most 64", len(p.AllowedSources))
	}
	for i, s := range p.AllowedSources {
		var err error
		if strings.Contains(s, "/") {
			_, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(s)
			if err == nil && a.Zone() != "" {
				err = fmt.Errorf("zone")
			}
		}
		if err != nil {
			return bad(fmt.Sprintf("allowedSources[%d]", i), "%q is not an IP address or CIDR prefix", truncate(s, 80))
		}
	}
	if p.Retries < 0 || p.Retries > MaxBootRetries {
		return bad("retries", "%d: want 0 to %d", p.Retries, MaxBootRetries)
	}
	if p.RetryBackoff.Duration < 0 || p.RetryBackoff.Duration > MaxBootRetryBackoff {
		return bad("retryBackoff", "%s: want 0 (default 10s) to %s", p.RetryBackoff.Duration, MaxBootRetryBackoff)
	}
	return nil
}

// validSignal mirrors bootstate.ValidateSignal (task does not import it).
func validSignal(s string) string {
	if s == "" || len(s) > 63 {
		return fmt.Sprintf("%q: want 1 to 63 bytes", truncate(s, 80))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && !(i > 0 && '0' <= c && c <= '9') {
			return fmt.Sprintf("%q: want CamelCase letters and digits starting with a letter", truncate(s, 80))
		}
	}
	if s == conditions.TypeCompleted || s == conditions.TypeRunning {
		return fmt.Sprintf("%q is reserved", s)
	}
	return ""
}

// BootTryStep is where one try of a wait-for-boot task is. Like task
// phases, each step is stored before the action it names is sent, so a
// resumed job repeats at most the action of the step it stopped in, never
// one already past.
//
// +kubebuilder:validation:Enum=Backoff;SettingBootOverride;PowerCycling;Waiting;Done
type BootTryStep string

// Steps of a boot try.
const (
	// BootTryBackoff: the try waits for NotBefore; nothing was sent yet.
	BootTryBackoff BootTryStep = "Backoff"
	// BootTrySettingBootOverride: the attempt is open; the boot override is
	// being set again (intent stored; it may or may not have reached the BMC).
	BootTrySettingBootOverride BootTryStep = "SettingBootOverride"
	// BootTryPowerCycling: the override is set (read back where possible);
	// the power cycle is being sent (intent stored).
	BootTryPowerCycling BootTryStep = "PowerCycling"
	// BootTryWaiting: the boot was triggered; waiting for its signals.
	BootTryWaiting BootTryStep = "Waiting"
	// BootTryDone: the try ended; see Result, Stage.
	BootTryDone BootTryStep = "Done"
)

// BootTry is one try of a wait-for-boot task: one boot attempt.
type BootTry struct {
	// Try counts from 1 (the boot triggered by the job's earlier tasks).
	Try int `json:"try"`
	// AttemptID is the boot attempt of this try (see job.BootTryAttemptID).
	AttemptID string `json:"attemptID"`
	// Step is where the try is.
	Step BootTryStep `json:"step"`
	// Result is empty until Step is Done, then Succeeded, TimedOut, ...
	Result conditions.Result `json:"result,omitempty"`
	// Stage is the reason the try ended with: Booted, TimedOut, or the stage
	// whose deadline passed (IPXETimeout, IgnitionTimeout,
	// BootStateTimeout, ...).
	Stage string `json:"stage,omitempty"`
	// Message is the boot record's message when the try ended.
	Message string `json:"message,omitempty"`
	// NotBefore is when a retry may start (after its backoff).
	NotBefore *timestamp.Time `json:"notBefore,omitempty"`
	// StartTime is when the try's boot attempt was opened.
	StartTime *timestamp.Time `json:"startTime,omitempty"`
	// OverrideTime is when the boot override was set again (retries only).
	OverrideTime *timestamp.Time `json:"overrideTime,omitempty"`
	// PowerCycleTime is when the power cycle was sent (retries only).
	PowerCycleTime *timestamp.Time `json:"powerCycleTime,omitempty"`
	// EndTime is when the try ended.
	EndTime *timestamp.Time `json:"endTime,omitempty"`
}
