package fake

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
)

// Clock is the time source the fake uses for latency and for delayed power
// transitions: [clock.Clock], so a manually advanced clock.Fake in a test
// fits, as does any value with Now and After. Defaults to the wall clock.
type Clock = clock.Clock

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Capability is [bmc.Capability]: the names of features a BMC may lack,
// shared by packages fake and bmctest.
type Capability = bmc.Capability

// Hook runs before the fake performs a call (after its latency). A non-nil
// error fails the call with that error (wrapped in a [*bmc.OpError]) and
// leaves the BMC's state unchanged. Wrap the error with [bmc.Transient] to
// simulate a failure worth retrying. Hooks run without the fake's lock held,
// so they may call the [BMC]'s own methods (State, SetPower, ...); they must
// be safe for concurrent use.
type Hook func(ctx context.Context, call Call) error

// Options configures a [BMC]. The zero value is a BMC that is powered off,
// accepts any credentials, answers at once, lands power changes at once and
// supports every capability.
type Options struct {
	// Username and Password are the credentials the BMC accepts: its first
	// account (see Accounts). Defaults to accepting any credentials when
	// both are empty, except the user names of accounts created since,
	// which need their passwords.
	Username string
	Password string

	// Power is the initial power state: bmc.PowerOn or bmc.PowerOff.
	// Defaults to bmc.PowerOff.
	Power bmc.PowerState

	// Latency is how long every call (Dial and Close included) takes before
	// it is served, measured on Clock; a cancelled ctx ends the wait.
	// Defaults to 0 (no wait).
	Latency time.Duration

	// PowerTransition is how long a power change stays in a transitional
	// state (bmc.PowerPoweringOn / bmc.PowerPoweringOff) before it lands,
	// measured on Clock. A cycle spends it twice (off, then on). Defaults to
	// 0: power changes land at once.
	PowerTransition time.Duration

	// SoftOffDelay is how long the OS takes to shut down after a soft-off
	// (the BMC reports bmc.PowerPoweringOff meanwhile). Defaults to
	// PowerTransition.
	SoftOffDelay time.Duration

	// SoftOffIgnored makes soft-off requests succeed without effect, like a
	// server whose OS ignores ACPI (or a simulator with no OS). Defaults to
	// false.
	SoftOffIgnored bool

	// DropDuringTransition makes SetPower calls that arrive while a power
	// change is still pending succeed without effect, as some real BMCs
	// silently drop them. Defaults to false (a new request replaces the
	// pending one).
	DropDuringTransition bool

	// IgnoreOnceOverride makes the BMC accept one-time boot overrides and
	// drop them (they read back as bmc.BootDeviceNone and the next boot uses
	// the disk), as some BMCs silently do. Persistent overrides work.
	// Defaults to false.
	IgnoreOnceOverride bool

	// BMCResetDowntime is how long the BMC is unreachable after a ResetBMC:
	// meanwhile every call (Dial included) fails with a transient error, as
	// a connection refused would. Sessions survive. Defaults to 0: the BMC
	// answers again at once.
	BMCResetDowntime time.Duration

	// MaxSessions is how many sessions may be open at once; a Dial beyond it
	// fails with a transient error, as BMCs with a small session table do.
	// Defaults to 0: unlimited.
	MaxSessions int

	// CallLogSize bounds the call log: beyond it the oldest entries are
	// dropped, so a long benchmark or demo does not grow without bound.
	// Defaults to 10000; a negative value disables the log.
	CallLogSize int

	// Inventory is what Inventory reports (bmc.InventoryReader).
	// Defaults to [DefaultInventory].
	Inventory *bmc.Inventory

	// BIOSRegistry is the BIOS attribute registry and BIOSAttributes the
	// current values (bmc.BIOSConfigurer). Default to
	// [DefaultBIOSRegistry] and [DefaultBIOSAttributes] (BIOSAttributes
	// defaults to none when BIOSRegistry is set).
	BIOSRegistry   bmc.BIOSRegistry
	BIOSAttributes bmc.BIOSAttributes

	// BIOSImmediate applies SetBIOSAttributes at once. Defaults to false:
	// the attributes are pending until the next boot (a power on from
	// off, a cycle or a reset), as on most BMCs.
	BIOSImmediate bool

	// SecureBootImmediate applies SetSecureBoot to the current boot at
	// once. Defaults to false: the setting changes at once and the boot
	// runs with it from the next boot on (bmc.SecureBootState.Pending
	// until then), as in the DMTF model.
	SecureBootImmediate bool

	// BootOptions are the boot options (bmc.BootOrderManager), in boot
	// order. Defaults to [DefaultBootOptions].
	BootOptions []bmc.BootOption

	// BootOrderImmediate applies SetBootOrder at once. Defaults to false:
	// the change is pending until the next boot, as on BMCs that hold it
	// in a settings object.
	BootOrderImmediate bool

	// Health is what Health reports (bmc.HealthReader), and the system's
	// part what SystemStatus reports with the power state; ReadTime is
	// ignored. Defaults to [DefaultHealth]; see [BMC.SetHealth].
	Health *bmc.HealthReport

	// Logs are the BMC's event logs (bmc.EventLogReader,
	// bmc.EventLogClearer), each with its entries in listing order.
	// Defaults to [DefaultLogs]; an empty non-nil list is a BMC with no
	// log. See [BMC.AddLogEntry].
	Logs []Log

	// Unsupported lists the capabilities this BMC lacks. Defaults to none.
	Unsupported []Capability

	// Hooks are fault hooks per method, installed at creation; see
	// [BMC.SetHook]. Defaults to none.
	Hooks map[Method]Hook

	// Accounts configure the BMC's accounts (bmc.AccountManager): its
	// password policy and fixed slots. The account of Username and
	// Password is its first account. Defaults to no policy, no slots.
	Accounts AccountOptions

	// Firmware configures firmware updates (bmc.FirmwareUpdater).
	// Defaults to components BMC and BIOS at 1.0.0, no known images.
	Firmware FirmwareOptions

	// Clock drives Latency and PowerTransition. Defaults to the wall clock.
	Clock Clock
}

func (o Options) validate() error {
	switch o.Power {
	case "", bmc.PowerOn, bmc.PowerOff:
	default:
		return fmt.Errorf("fake: Options.Power %q: want %q or %q", o.Power, bmc.PowerOn, bmc.PowerOff)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Latency", o.Latency}, {"PowerTransition", o.PowerTransition}, {"SoftOffDelay", o.SoftOffDelay}, {"BMCResetDowntime", o.BMCResetDowntime}} {
		if d.v < 0 {
			return fmt.Errorf("fake: Options.%s %v: must not be negative", d.name, d.v)
		}
	}
	if o.Firmware.Duration < 0 {
		return fmt.Errorf("fake: Options.Firmware.Duration %v: must not be negative", o.Firmware.Duration)
	}
	if o.MaxSessions < 0 {
		return fmt.Errorf("fake: Options.MaxSessions %d: must not be negative", o.MaxSessions)
	}
	for _, c := range o.Unsupported {
		if !c.Valid() {
			return fmt.Errorf("fake: Options.Unsupported: unknown capability %q", c)
		}
	}
	seen := map[bmc.LogRef]bool{}
	for i, l := range o.Logs {
		if err := l.LogRef.Validate(); err != nil {
			return fmt.Errorf("fake: Options.Logs[%d]: %v", i, err)
		}
		if seen[l.LogRef] {
			return fmt.Errorf("fake: Options.Logs[%d]: log %s listed twice", i, l.LogRef)
		}
		seen[l.LogRef] = true
	}
	if err := o.Accounts.validate(); err != nil {
		return err
	}
	for m := range o.Hooks {
		if !m.valid() {
			return fmt.Errorf("fake: Options.Hooks: unknown method %q", m)
		}
	}
	return nil
}
