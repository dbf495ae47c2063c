package fake

import (
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// The power model is lazy: a power change records the legs of its
// transition with their end times on the clock, and every read lands the
// legs that are due. No goroutine runs behind the BMC, so a manually
// advanced clock drives transitions deterministically.
//
// All functions here are called with b.mu held.

// settle lands every transition leg whose end has passed.
func (b *BMC) settle() {
	if len(b.steps) == 0 {
		return
	}
	now := b.clock.Now()
	for len(b.steps) > 0 && !now.Before(b.steps[0].end) {
		s := b.steps[0]
		b.steps = b.steps[1:]
		b.land(s.after, s.end)
	}
	if len(b.steps) == 0 {
		b.steps = nil
	}
}

// land sets the landed power state at time at, counting a boot when the
// server comes on.
func (b *BMC) land(s bmc.PowerState, at time.Time) {
	if s == bmc.PowerOn && b.power != bmc.PowerOn {
		b.boot(at)
	}
	b.power = s
}

// boot records a boot at time at from the override's device and consumes a
// one-time override, as BMCs do; at is the system's LastResetTime.
func (b *BMC) boot(at time.Time) {
	b.activateFirmware(false) // host firmware staged for this boot
	b.boots++
	if !at.After(b.lastReset) {
		at = b.lastReset.Add(time.Nanosecond) // later than the last, also on a clock that stands still
	}
	b.lastReset = at
	b.bios.applyPending() // pending BIOS settings take effect at boot
	b.secureBoot.booted() // the boot runs with the Secure Boot setting
	b.bootOrder.booted()  // a pending boot order takes effect
	b.lastBoot = bmc.BootDeviceDisk
	if b.override.Device != bmc.BootDeviceNone && b.override.Device != "" {
		b.lastBoot = b.override.Device
		if !b.override.Persistent {
			b.override = bmc.BootOverride{Device: bmc.BootDeviceNone, Mode: b.override.Mode}
		}
	}
}

// visible is the state PowerState reports.
func (b *BMC) visible() bmc.PowerState {
	if len(b.steps) > 0 {
		return b.steps[0].during
	}
	return b.power
}

// schedule starts a transition through the given legs; a zero delay lands
// them at once.
func (b *BMC) schedule(legs ...step) {
	b.steps = nil
	now := b.clock.Now()
	for _, l := range legs {
		d := l.end.Sub(time.Time{})
		l.end = now.Add(d)
		now = l.end
		if d == 0 && len(b.steps) == 0 {
			// Due now, as settle would find: land it without allocating.
			b.land(l.after, now)
			continue
		}
		b.steps = append(b.steps, l)
	}
	b.settle()
}

// leg builds a transition leg lasting d.
func leg(during bmc.PowerState, d time.Duration, after bmc.PowerState, hard bool) step {
	return step{during: during, end: time.Time{}.Add(d), after: after, hard: hard}
}

func (b *BMC) setPower(a bmc.PowerAction) error {
	var lacks Capability
	switch a {
	case bmc.PowerActionOn, bmc.PowerActionOff:
	case bmc.PowerActionSoftOff:
		lacks = bmc.CapabilityPowerSoftOff
	case bmc.PowerActionCycle:
		lacks = bmc.CapabilityPowerCycle
	case bmc.PowerActionReset:
		lacks = bmc.CapabilityPowerReset
	default:
		return bmc.Permanent(fmt.Errorf("invalid power action %q: want on, off, soft-off, cycle or reset", a))
	}
	b.settle()
	cur := b.visible()
	// On a server that is off, soft-off is a no-op and cycle and reset mean
	// "power on" (see bmc.PowerAction): only a server that is on needs the
	// capability.
	if lacks != "" && b.lacks[lacks] && cur != bmc.PowerOff && cur != bmc.PowerPoweringOff {
		return fmt.Errorf("power action %q: %w", a, bmc.ErrNotSupported)
	}
	if len(b.steps) > 0 && b.opts.DropDuringTransition {
		return nil // dropped, as some BMCs do while a change is pending
	}
	d := b.opts.PowerTransition
	powerOn := func() {
		if cur == bmc.PowerOn || cur == bmc.PowerPoweringOn {
			return
		}
		b.schedule(leg(bmc.PowerPoweringOn, d, bmc.PowerOn, false))
	}
	switch a {
	case bmc.PowerActionOn:
		powerOn()
	case bmc.PowerActionOff:
		if cur == bmc.PowerOff || (cur == bmc.PowerPoweringOff && b.steps[0].hard) {
			return nil
		}
		b.schedule(leg(bmc.PowerPoweringOff, d, bmc.PowerOff, true))
	case bmc.PowerActionSoftOff:
		if cur == bmc.PowerOff || cur == bmc.PowerPoweringOff || b.opts.SoftOffIgnored {
			return nil
		}
		b.schedule(leg(bmc.PowerPoweringOff, b.opts.SoftOffDelay, bmc.PowerOff, false))
	case bmc.PowerActionCycle:
		if cur != bmc.PowerOn {
			powerOn()
			return nil
		}
		b.schedule(leg(bmc.PowerPoweringOff, d, bmc.PowerOff, true), leg(bmc.PowerPoweringOn, d, bmc.PowerOn, false))
	case bmc.PowerActionReset:
		if cur != bmc.PowerOn {
			powerOn()
			return nil
		}
		// A warm reset keeps power on: the server reboots at once.
		b.boot(b.clock.Now())
	}
	return nil
}
