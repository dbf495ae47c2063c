package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// Clock is the time source: [clock.Clock], so clock.Real, clock.Fake and any
// value with Now and After fit.
type Clock = clock.Clock

// StepperConfig configures a Stepper. The zero value of every field but
// Dialer means its default.
type StepperConfig struct {
	// Dialer opens BMC connections. Required.
	Dialer bmc.Dialer
	// Kinds are the task kinds the program adds, by domain-qualified name
	// ("example.com/raid-reset"), run by tasks whose spec sets Custom with
	// that name (see [Kind] and docs/custom-kinds.md). A job with a custom
	// task whose kind is not here, or whose params its kind refuses, fails
	// at its start with reason InvalidSpec (and Runner.Submit refuses it).
	Kinds Kinds
	// Credentials resolves Spec.CredentialsRef. Defaults to a resolver that
	// returns empty credentials for an empty ref and an error otherwise.
	Credentials bmc.CredentialsResolver
	// Boot tracks boots for wait-for-boot tasks. Required only for jobs that
	// have such tasks; without it they fail with reason NotSupported.
	Boot BootTracker
	// Clock defaults to the wall clock.
	Clock Clock
	// Logger defaults to logr.Discard(); a logger in the ctx passed to Step
	// (logr.NewContext) takes precedence.
	Logger logr.Logger
	// DefaultTaskTimeout bounds a task whose Spec has no Timeout. Defaults
	// to 5 minutes (30 minutes for wait-for-boot tasks).
	DefaultTaskTimeout time.Duration
	// PollInterval is the delay between read-backs right after an action.
	// Defaults to 250ms (at most 4 polls per second, so a change is seen
	// within about 0.3 s of landing).
	PollInterval time.Duration
	// SlowPollAfter is how long after an action polling stays fast.
	// Defaults to 30s; after it polls come every SlowPollInterval.
	SlowPollAfter time.Duration
	// SlowPollInterval defaults to 2s.
	SlowPollInterval time.Duration
	// ResendAfter re-sends a power action whose effect was not observed
	// after this long while the BMC reports no transition (BMCs drop
	// requests). Defaults to 30s.
	ResendAfter time.Duration
	// BootPollInterval is the delay between boot-state checks of a
	// wait-for-boot task. Defaults to 1s.
	BootPollInterval time.Duration
	// MaxVerifyResends is how often a boot override that the BMC ignored or
	// reverted is set again before the task fails. Defaults to 2.
	MaxVerifyResends int
	// Retry is the backoff between attempts after transient errors.
	// Defaults to 500ms doubling to 15s, +/-20% jitter.
	Retry retry.Policy
	// IdleTimeout closes pooled connections unused for this long. Defaults
	// to 2 minutes.
	IdleTimeout time.Duration
	// Locks keeps two jobs (and two processes stepping one job) from acting
	// on one system at the same time on the controller path (see
	// [syslock.Locker] and [syslock.NewStoreLocker]). Step locks the job's system
	// before it touches the BMC and unlocks it once the job completed; while
	// another job, or another process, holds the system, Step touches
	// nothing and returns a StepResult with Waiting set. Every BMC request of
	// the step is fenced by the lock's validity (see docs/jobs.md, "The
	// fence"). Required: a host that keeps two jobs off one system by other
	// means says so with [syslock.NoLocking]; NewStepper refuses nil, so a lock
	// cannot be left out by accident.
	Locks syslock.Locker
	// LockRetryInterval is the RequeueAfter of a Step that found its system
	// held by another job. Defaults to 2s.
	LockRetryInterval time.Duration
	// PowerGate, if set, admits every power on, cycle and reset before it is
	// sent (power-on staggering); while it says to wait, the task waits
	// without touching the BMC. Nil admits everything.
	PowerGate PowerGate
	// PowerSettle, when > 0, is how long a power on, off or soft-off task
	// that finds its target state already there (nothing sent yet) keeps
	// reading the state, every PollInterval, before it takes the effect as
	// present: some BMCs report the old state, with no transitional state,
	// while another client's change is still landing. If the state leaves
	// the target within the window, the task sends its action as usual.
	// The window is waited out within one Step. Defaults to 0 (off): it
	// costs that much time, and a read every PollInterval, on every power
	// task that finds its target already there.
	PowerSettle time.Duration
	// AdaptivePoll makes power tasks poll sparsely before the time the
	// system's recent changes of the same action took and densely around
	// it, learned in memory (see [AdaptivePoll]). On by default; set
	// AdaptivePoll.Disabled for the fixed schedule above.
	AdaptivePoll AdaptivePoll
	// PowerEvents confirms power changes from the BMC's event stream where
	// the driver implements bmc.PowerWatcher (see [PowerEvents]). It needs
	// Wake; on by default when Wake is set.
	PowerEvents PowerEvents
	// Wake, when set, is called with a job's name when the job should be
	// stepped again now, ahead of the RequeueAfter its last Step returned:
	// the BMC reported a change the job waits for (or the event stream it
	// relied on ended). It is called from a driver's goroutine and must not
	// block (a controller sends a GenericEvent on a buffered channel
	// source; the Runner sets its own). Defaults to nil: no events are
	// watched, power tasks only poll.
	Wake func(job string)
	// Observer receives job, task, BMC error and wire events for metrics
	// and traces (see [observe.Observer]; adapters in contrib/prometheus and
	// contrib/otel). Defaults to none.
	Observer observe.Observer
}

// check validates kinds' names (NewStepper).
func (ks Kinds) check() error {
	for name, k := range ks {
		if msg := task.ValidCustomKindName(name); msg != "" {
			return fmt.Errorf("job: StepperConfig.Kinds: %s", msg)
		}
		if k == nil {
			return fmt.Errorf("job: StepperConfig.Kinds: %q is nil", name)
		}
	}
	return nil
}

// validate checks the custom tasks of spec s against the registered kinds:
// each names a kind here, and the kind takes its params. (Spec.validate,
// which has no configuration, checked their shape.)
func (ks Kinds) validate(s *Spec) error {
	for i := range s.Tasks {
		c := s.Tasks[i].Custom
		if c == nil {
			continue
		}
		k := ks[c.Kind]
		if k == nil {
			return fmt.Errorf("%w: tasks[%d].custom.kind: %q is not a kind this program registered (StepperConfig.Kinds)", ErrInvalidSpec, i, truncate(c.Kind, 80))
		}
		if err := k.Validate(json.RawMessage(c.Params)); err != nil {
			return invalidAt(fmt.Sprintf("tasks[%d].custom.params", i), err)
		}
	}
	return nil
}

// withDefaults returns cfg with every zero field that has a default set to
// it (the field's documentation says which).
func (cfg StepperConfig) withDefaults() StepperConfig {
	if cfg.Credentials == nil {
		cfg.Credentials = bmc.CredentialsFunc(func(_ context.Context, ref string) (bmc.Credentials, error) {
			if ref == "" {
				return bmc.Credentials{}, nil
			}
			return bmc.Credentials{}, fmt.Errorf("no bmc.CredentialsResolver configured to resolve %q", ref)
		})
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.DefaultTaskTimeout, 5*time.Minute)
	def(&cfg.PollInterval, 250*time.Millisecond)
	def(&cfg.SlowPollAfter, 30*time.Second)
	def(&cfg.SlowPollInterval, 2*time.Second)
	def(&cfg.ResendAfter, 30*time.Second)
	def(&cfg.BootPollInterval, time.Second)
	def(&cfg.IdleTimeout, 2*time.Minute)
	def(&cfg.LockRetryInterval, 2*time.Second)
	if cfg.MaxVerifyResends <= 0 {
		cfg.MaxVerifyResends = 2
	}
	def(&cfg.AdaptivePoll.DenseInterval, 2*cfg.PollInterval)
	def(&cfg.AdaptivePoll.MaxGap, 10*cfg.PollInterval)
	cfg.AdaptivePoll.MaxGap = max(cfg.AdaptivePoll.MaxGap, cfg.AdaptivePoll.DenseInterval)
	if cfg.AdaptivePoll.MinSamples <= 0 {
		cfg.AdaptivePoll.MinSamples = 3
	}
	if cfg.AdaptivePoll.MaxKeys <= 0 {
		cfg.AdaptivePoll.MaxKeys = 100_000
	}
	def(&cfg.PowerEvents.PollInterval, 10*time.Second)
	return cfg
}

// forKinds is what kinds read of cfg (defaults applied).
func (cfg *StepperConfig) forKinds() kindConfig {
	return kindConfig{
		defaultTaskTimeout: cfg.DefaultTaskTimeout,
		pollInterval:       cfg.PollInterval,
		slowPollInterval:   cfg.SlowPollInterval,
		resendAfter:        cfg.ResendAfter,
		bootPollInterval:   cfg.BootPollInterval,
		maxVerifyResends:   cfg.MaxVerifyResends,
		powerSettle:        cfg.PowerSettle,
		clock:              cfg.Clock,
		boot:               cfg.Boot,
		kinds:              cfg.Kinds,
		credentials:        cfg.Credentials,
		dialer:             cfg.Dialer,
	}
}
