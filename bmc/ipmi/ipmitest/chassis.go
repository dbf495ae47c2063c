package ipmitest

import (
	"context"
	"sync"
	"time"

	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/hal"
	"github.com/bougou/go-ipmi/pkg/hal/mock"
	"github.com/bougou/go-ipmi/pkg/handlers"
	"github.com/bougou/go-ipmi/pkg/types"
)

// simHAL is go-ipmi's mock HAL with a chassis whose power actions behave
// like a server's (the mock's only count calls).
type simHAL struct {
	*mock.HAL
	chassis *Chassis
}

func (h *simHAL) Chassis() hal.ChassisHAL { return h.chassis }

// Chassis keeps the simulated server's power and boot state. Its methods
// are safe for concurrent use.
//
// Delayed power changes (Options.PowerDelay) are kept as pending changes
// with the time they land, applied by the first read that finds their time
// has come (Options.Clock): the same observations as a timer firing, but a
// fake clock moves them too.
type Chassis struct {
	mu          sync.Mutex
	clock       Clock
	delay       time.Duration
	onceTimeout time.Duration
	pending     []pendingChange
	on          bool
	flags       types.BootOptionParam_BootFlags
	onceExpires time.Time // when a valid one-time flag times out (onceTimeout > 0)
	validClear  uint8     // Set System Boot Options parameter 3 (bit 3: don't clear on timeout)
	ack         types.BootOptionParam_BootInfoAcknowledge
	boots       int
	faults      ChassisFaults

	powerCycles   int
	hardResets    int
	softOffs      int
	bmcColdResets int
	bmcWarmResets int

	identify identifyState // identify.go
	nmis     int           // diagnostic interrupts (identify.go)
}

type pendingChange struct {
	at time.Time
	f  func()
}

var _ hal.ChassisHAL = (*Chassis)(nil)

// Parameter 3 bit 3: don't clear the valid bit when no Chassis Control
// command arrives within the timeout (IPMI v2.0 table 28-14).
const dontClearOnTimeout = 0x08

// settle applies the pending changes whose time has come and times out a
// one-time boot flag. Callers hold c.mu.
func (c *Chassis) settle() {
	now := c.clock.Now()
	for len(c.pending) > 0 && !c.pending[0].at.After(now) {
		f := c.pending[0].f
		c.pending = c.pending[1:]
		f()
	}
	if c.onceTimeout > 0 && c.flags.BootFlagsValid && !c.flags.Persist && c.validClear&dontClearOnTimeout == 0 &&
		!c.onceExpires.IsZero() && !now.Before(c.onceExpires) {
		c.flags.BootFlagsValid = false
		c.onceExpires = time.Time{}
	}
}

// boot is the server starting: the firmware consumes a one-time boot flag,
// and the BMC clears its valid bit. Callers hold c.mu.
func (c *Chassis) boot() {
	c.boots++
	if c.flags.BootFlagsValid && !c.flags.Persist {
		c.flags.BootFlagsValid = false
		c.onceExpires = time.Time{}
	}
}

// chassisControl restarts the one-time flag's countdown, as a Chassis
// Control command does (IPMI v2.0 table 28-14, parameter 3). Callers hold
// c.mu.
func (c *Chassis) chassisControl() {
	if c.onceTimeout > 0 && c.flags.BootFlagsValid && !c.flags.Persist {
		c.onceExpires = c.clock.Now().Add(c.onceTimeout)
	}
}

func (c *Chassis) locked(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle()
	f()
}

func (c *Chassis) count(f func()) { c.locked(f) }

// PoweredOn reports the power state.
func (c *Chassis) PoweredOn() bool {
	var on bool
	c.locked(func() { on = c.on })
	return on
}

// SetPoweredOn changes the power state behind the client's back (the power
// button). Turning a server on that was off is a boot: it consumes a
// one-time boot flag.
func (c *Chassis) SetPoweredOn(on bool) {
	c.locked(func() {
		if on && !c.on {
			c.boot()
		}
		c.on = on
	})
}

// Counts is how often each action reached the simulator, and how often
// the simulated server booted.
type Counts struct {
	PowerCycles, HardResets, SoftOffs, BMCColdResets, BMCWarmResets int
	// Boots counts power-ons, power cycles and hard resets of a running
	// server that landed: each consumes a one-time boot flag.
	Boots int
	// NMIs counts Chassis Control "pulse diagnostic interrupt" requests
	// the simulator accepted.
	NMIs int
}

// Counts returns the action counters.
func (c *Chassis) Counts() Counts {
	var n Counts
	c.locked(func() {
		n = Counts{PowerCycles: c.powerCycles, HardResets: c.hardResets, SoftOffs: c.softOffs,
			BMCColdResets: c.bmcColdResets, BMCWarmResets: c.bmcWarmResets, Boots: c.boots, NMIs: c.nmis}
	})
	return n
}

// BootFlags returns the stored boot flags (Set System Boot Options
// parameter 5), as the BMC would hand them to the firmware. A one-time
// flag that a boot consumed or that timed out reads with BootFlagsValid
// false.
func (c *Chassis) BootFlags() types.BootOptionParam_BootFlags {
	var f types.BootOptionParam_BootFlags
	c.locked(func() { f = c.flags })
	return f
}

// PowerState implements hal.ChassisHAL.
func (c *Chassis) PowerState(context.Context) (bool, error) { return c.PoweredOn(), nil }

// land applies a power change now, or after the configured delay. Callers
// hold c.mu.
func (c *Chassis) land(f func()) {
	if c.delay <= 0 {
		f()
		return
	}
	at := c.clock.Now().Add(c.delay)
	i := len(c.pending)
	for i > 0 && c.pending[i-1].at.After(at) {
		i--
	}
	c.pending = append(c.pending[:i], append([]pendingChange{{at, f}}, c.pending[i:]...)...)
}

// SetPower implements hal.ChassisHAL (Chassis Control power up/down).
func (c *Chassis) SetPower(_ context.Context, on bool) error {
	c.locked(func() {
		c.chassisControl()
		c.land(func() {
			if on && !c.on {
				c.boot()
			}
			c.on = on
		})
	})
	return nil
}

// PowerCycle implements hal.ChassisHAL: the server ends up on, booted.
func (c *Chassis) PowerCycle(context.Context) error {
	c.locked(func() {
		c.powerCycles++
		c.chassisControl()
		c.land(func() {
			c.on = true
			c.boot()
		})
	})
	return nil
}

// ColdReset implements hal.ChassisHAL (Chassis Control hard reset): a
// server that is on stays on and boots again; one that is off stays off.
func (c *Chassis) ColdReset(context.Context) error {
	c.locked(func() {
		c.hardResets++
		c.chassisControl()
		c.land(func() {
			if c.on {
				c.boot()
			}
		})
	})
	return nil
}

// WarmReset implements hal.ChassisHAL. go-ipmi's handler calls it for
// Chassis Control soft shutdown, so the server turns off.
func (c *Chassis) WarmReset(context.Context) error {
	c.locked(func() {
		c.softOffs++
		c.chassisControl()
		c.land(func() { c.on = false })
	})
	return nil
}

// ChassisFaults are the fault bits Get Chassis Status reports (IPMI v2.0
// table 28-3), which a test sets with [Chassis.SetFaults].
type ChassisFaults struct {
	// Current power state byte.
	PowerOverload, PowerFault, PowerControlFault, Interlock bool
	// Misc. chassis state byte.
	CoolingFault, DriveFault, FrontPanelLockout, Intrusion bool
}

// SetFaults sets the fault bits Get Chassis Status reports from now on.
func (c *Chassis) SetFaults(f ChassisFaults) { c.locked(func() { c.faults = f }) }

// Faults returns the fault bits Get Chassis Status reports.
func (c *Chassis) Faults() ChassisFaults {
	var f ChassisFaults
	c.locked(func() { f = c.faults })
	return f
}

// handleGetChassisStatus answers Get Chassis Status (IPMI v2.0 28.2) with
// the power state and the fault bits (go-ipmi's handler reports no
// faults but intrusion).
func (c *Chassis) handleGetChassisStatus(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
	var res chassis.GetChassisStatusResponse
	c.locked(func() {
		f := c.faults
		res = chassis.GetChassisStatusResponse{
			PowerIsOn: c.on, PowerOverload: f.PowerOverload, PowerFault: f.PowerFault, PowerControlFault: f.PowerControlFault,
			InterLock: f.Interlock, CollingFanFault: f.CoolingFault, DriveFault: f.DriveFault,
			FrontPanelLockoutActive: f.FrontPanelLockout, ChassisIntrusionActive: f.Intrusion,
			ChassisIdentifySupported: true, ChassisIdentifyState: c.identify.state(c.clock.Now()),
		}
	})
	return res.Pack(), types.CodeOK, nil
}

// Identify implements hal.ChassisHAL: go-ipmi's handler passes 255 for
// "force on" (registerIdentifyHandlers tells the two apart).
func (c *Chassis) Identify(_ context.Context, seconds uint8) error {
	c.locked(func() { c.identify = newIdentify(c.clock.Now(), seconds, seconds == 0xff) })
	return nil
}

// IntrusionState implements hal.ChassisHAL: the Intrusion fault bit.
func (c *Chassis) IntrusionState(context.Context) (bool, error) { return c.Faults().Intrusion, nil }

// SetBootFlags implements hal.ChassisHAL.
func (c *Chassis) SetBootFlags(_ context.Context, f *types.BootOptionParam_BootFlags) error {
	if f == nil {
		return hal.ErrNotSupported
	}
	c.locked(func() {
		c.flags = *f
		c.onceExpires = time.Time{}
		if c.onceTimeout > 0 && f.BootFlagsValid && !f.Persist {
			c.onceExpires = c.clock.Now().Add(c.onceTimeout)
		}
	})
	return nil
}

// GetBootFlags implements hal.ChassisHAL.
func (c *Chassis) GetBootFlags(context.Context) (*types.BootOptionParam_BootFlags, error) {
	f := c.BootFlags()
	return &f, nil
}

// SetBootInfoAcknowledge implements hal.ChassisHAL.
func (c *Chassis) SetBootInfoAcknowledge(_ context.Context, a *types.BootOptionParam_BootInfoAcknowledge) error {
	if a == nil {
		return hal.ErrNotSupported
	}
	c.locked(func() { c.ack = *a })
	return nil
}

// GetBootInfoAcknowledge implements hal.ChassisHAL.
func (c *Chassis) GetBootInfoAcknowledge(context.Context) (*types.BootOptionParam_BootInfoAcknowledge, error) {
	var a types.BootOptionParam_BootInfoAcknowledge
	c.locked(func() { a = c.ack })
	return &a, nil
}

// registerBootOptionHandlers keeps go-ipmi's Set/Get System Boot Options
// handlers but stores parameter 3 (BMC boot flag valid bit clearing), which
// go-ipmi accepts and forgets: the chassis honours its "don't clear on
// timeout" bit, and a client reads back what it set.
func registerBootOptionHandlers(reg *handlers.Registry, ch *Chassis) {
	std := handlers.NewRegistry()
	handlers.RegisterChassisHandlers(std)
	const param3 = uint8(types.BootOptionParamSelector_BMCBootFlagValidBitClear)
	reg.RegisterFunc(types.CommandSetSystemBootOptions, func(ctx context.Context, hctx *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
		if len(req) >= 2 && req[0]&0x7f == param3 {
			ch.locked(func() { ch.validClear = req[1] & 0x1f })
			return nil, types.CodeOK, nil
		}
		return std.Dispatch(ctx, hctx, uint8(types.CommandSetSystemBootOptions.NetFn), types.CommandSetSystemBootOptions.ID, req)
	})
	reg.RegisterFunc(types.CommandGetSystemBootOptions, func(ctx context.Context, hctx *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
		if len(req) >= 1 && req[0]&0x7f == param3 {
			var v uint8
			ch.locked(func() { v = ch.validClear })
			return []byte{0x01, param3, v}, types.CodeOK, nil
		}
		return std.Dispatch(ctx, hctx, uint8(types.CommandGetSystemBootOptions.NetFn), types.CommandGetSystemBootOptions.ID, req)
	})
}
