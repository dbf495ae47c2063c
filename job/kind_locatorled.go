package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("locatorLED", func(s *task.Spec) kind { return locatorLEDKind{s.LocatorLED.BMCState()} })
}

// locatorLEDKind sets the locator LED (bmc.LocatorLED) and reads it back:
// done when it shows the state (bmc.LEDState.Satisfies). Where the BMC
// cannot report the LED, the BMC's acceptance is the effect; a resumed
// task then sets it again, which is harmless. docs/indicator-nmi.md.
type locatorLEDKind struct{ want bmc.LEDState }

func (k locatorLEDKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k locatorLEDKind) usesBMC() bool                              { return true }
func (k locatorLEDKind) recheckable() bool                          { return true }

// preflight: the driver has a locator, and the BMC one that shows the state.
func (k locatorLEDKind) preflight(ctx context.Context, t *taskView) error {
	if _, ok := t.BMC.(bmc.LocatorLED); !ok {
		return notSupported(t.ep, "set the locator LED")
	}
	return checkNeed(ctx, t.BMC, bmc.Need{LocatorLED: k.want})
}

func (k locatorLEDKind) send(ctx context.Context, t *taskView) error {
	l, ok := t.BMC.(bmc.LocatorLED)
	if !ok {
		return notSupported(t.ep, "set the locator LED")
	}
	return l.SetLocatorLED(ctx, k.want)
}

func (k locatorLEDKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	l, ok := t.BMC.(bmc.LocatorLED)
	if !ok {
		return false, "", notSupported(t.ep, "read the locator LED")
	}
	got, err := l.LocatorLED(ctx)
	switch {
	case errors.Is(err, bmc.ErrNotSupported) && t.Sent:
		return true, fmt.Sprintf("the BMC accepted locator LED %s; it does not report the LED, so it was not read back", k.want), nil
	case errors.Is(err, bmc.ErrNotSupported):
		return false, "the BMC does not report the locator LED: setting it again", nil
	case err != nil:
		return false, "", err
	case !got.Satisfies(k.want):
		return false, fmt.Sprintf("the locator LED reads %s, want %s", got, k.want), nil
	}
	return true, "the locator LED reads " + string(got), nil
}
