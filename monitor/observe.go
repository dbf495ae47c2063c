package monitor

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
)

// Observer receives the monitor's events, for metrics and alerts
// (contrib/prometheus: Metrics.MonitorObserver). Every field is optional;
// a nil func is not called. The contract is job/observe's: funcs are fast
// and non-blocking (they run on the refresh's goroutine), safe for
// concurrent use, get copies, and a panic is recovered and logged. Events
// are reported after the record that holds the change was stored, by the
// replica that stored it: replicas sharing a Store report each change
// once.
type Observer struct {
	// HealthChanged is called when a machine's worst health (Health.Worst)
	// changed, the first health read of a machine included (from
	// bmc.HealthUnknown).
	HealthChanged func(HealthEvent)
	// CriticalEvent is called when critical BMC events newer than those a
	// machine's record reflected set its CriticalBMCEvent condition
	// (Config.Events).
	CriticalEvent func(CriticalEvent)
}

// HealthEvent is a change of a machine's health.
type HealthEvent struct {
	// System is the machine's bmc.Endpoint.SystemKey; BMC its address
	// (never with credentials).
	System string
	BMC    string
	// From and To are the worst health before and after.
	From, To bmc.Health
	// Health is what was read.
	Health Health
	// Time is when it was read.
	Time time.Time
}

// emit calls f(e) if f is set, recovering (and logging) a panic.
func emit[E any](log logr.Logger, f func(E), e E) {
	if f == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error(fmt.Errorf("panic: %v", p), "monitor observer panicked; event dropped")
		}
	}()
	f(e)
}
