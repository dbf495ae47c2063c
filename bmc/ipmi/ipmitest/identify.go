package ipmitest

import (
	"context"
	"time"

	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/handlers"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// identifyState is the chassis identify (locator LED) of the simulated
// server: forced on, on until a time, or off.
type identifyState struct {
	force bool
	until time.Time
}

// newIdentify is the state a Chassis Identify with this interval (0: off)
// and force bit leaves.
func newIdentify(now time.Time, interval uint8, force bool) identifyState {
	if force {
		return identifyState{force: true}
	}
	if interval == 0 {
		return identifyState{}
	}
	return identifyState{until: now.Add(time.Duration(interval) * time.Second)}
}

// state is what Get Chassis Status reports (IPMI v2.0 table 28-3).
func (s identifyState) state(now time.Time) chassis.ChassisIdentifyState {
	switch {
	case s.force:
		return chassis.ChassisIdentifyStateIndefiniteOn
	case now.Before(s.until):
		return chassis.ChassisIdentifyStateTemporaryOn
	}
	return chassis.ChassisIdentifyStateOff
}

// LocatorLED is the chassis identify as the server shows it: bmc.LEDOn
// while forced or timed on, else bmc.LEDOff.
func (c *Chassis) LocatorLED() bmc.LEDState {
	s := bmc.LEDOff
	c.locked(func() {
		if c.identify.state(c.clock.Now()) != chassis.ChassisIdentifyStateOff {
			s = bmc.LEDOn
		}
	})
	return s
}

// registerIdentifyHandlers answers Chassis Identify with the force bit kept
// apart from a 255 s interval (go-ipmi's handler folds them together), and
// Chassis Control "pulse diagnostic interrupt" (04h), which go-ipmi's
// handler refuses (C9h): counted in Counts.NMIs. The other Chassis Control
// functions go to go-ipmi's handler.
func registerIdentifyHandlers(reg *handlers.Registry, ch *Chassis) {
	std := handlers.NewRegistry()
	handlers.RegisterChassisHandlers(std)
	reg.RegisterFunc(types.CommandChassisIdentify, func(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
		interval := uint8(15) // the default when the request has no data (IPMI v2.0 28.5)
		if len(req) >= 1 {
			interval = req[0]
		}
		force := len(req) >= 2 && req[1]&0x01 != 0
		ch.locked(func() { ch.identify = newIdentify(ch.clock.Now(), interval, force) })
		return nil, types.CodeOK, nil
	})
	reg.RegisterFunc(types.CommandChassisControl, func(ctx context.Context, hctx *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
		if len(req) >= 1 && chassis.ChassisControl(req[0]&0x0f) == chassis.ChassisControlDiagnosticInterrupt {
			ch.count(func() { ch.nmis++; ch.chassisControl() })
			return nil, types.CodeOK, nil
		}
		return std.Dispatch(ctx, hctx, uint8(types.CommandChassisControl.NetFn), types.CommandChassisControl.ID, req)
	})
}
