package fake

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.LocatorLED = (*Driver)(nil)

// LocatorLED implements [bmc.LocatorLED]: the state the last SetLocatorLED
// (or [BMC.SetLocatorLED]) left, Off at first. Without
// [bmc.CapabilityLocatorLED] or [bmc.CapabilityLocatorLEDReadBack] it
// fails with an error wrapping [bmc.ErrNotSupported].
func (d *Driver) LocatorLED(ctx context.Context) (bmc.LEDState, error) {
	var s bmc.LEDState
	err := d.do(ctx, MethodLocatorLED, nil, func() error {
		b := d.bmc
		if err := b.lacksLED(bmc.CapabilityLocatorLED, bmc.CapabilityLocatorLEDReadBack); err != nil {
			return err
		}
		s = b.led
		return nil
	})
	return s, err
}

// SetLocatorLED implements [bmc.LocatorLED]. An invalid state is a
// permanent error; LEDBlinking without [bmc.CapabilityLocatorLEDBlink], or
// any state without [bmc.CapabilityLocatorLED], fails with an error
// wrapping [bmc.ErrNotSupported] and changes nothing.
func (d *Driver) SetLocatorLED(ctx context.Context, s bmc.LEDState) error {
	return d.do(ctx, MethodSetLocatorLED, []any{s}, func() error { return d.bmc.setLED(s) })
}

// setLED runs under b.mu.
func (b *BMC) setLED(s bmc.LEDState) error {
	if !s.Valid() {
		return bmc.Permanent(fmt.Errorf("invalid locator LED state %q: want Off, On or Blinking", s))
	}
	if err := b.lacksLED(bmc.CapabilityLocatorLED); err != nil {
		return err
	}
	if s == bmc.LEDBlinking {
		if err := b.lacksLED(bmc.CapabilityLocatorLEDBlink); err != nil {
			return err
		}
	}
	b.led = s
	return nil
}

// lacksLED is the NotSupported error of the first of cs the BMC lacks;
// called with b.mu held.
func (b *BMC) lacksLED(cs ...Capability) error {
	for _, c := range cs {
		if b.lacks[c] {
			return fmt.Errorf("locator LED: the BMC lacks %s: %w", c, bmc.ErrNotSupported)
		}
	}
	return nil
}

// SetLocatorLED sets the locator's state behind the client's back (a
// technician pressing the UID button). A test hook: it logs no call and
// ignores the capabilities. It panics on an invalid state.
func (b *BMC) SetLocatorLED(s bmc.LEDState) {
	if !s.Valid() {
		panic(fmt.Sprintf("fake: SetLocatorLED(%q): want Off, On or Blinking", s))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.led = s
}
