package redfish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/bmckit/bmckit/bmc"
)

// SetPower requests a power change (see [bmc.PowerAction]). It reads the
// state first (one GET, or none when ctx's [bmc.ReadScope] holds a read of
// the system with no action sent since) and sends nothing when the server
// is already where the action leads. Cycle and reset use what the BMC advertises; an
// advertised type the BMC refuses (501, 405, 400 ActionNotSupported) is
// remembered and the next candidate tried, down to ForceOff, wait for Off,
// On. While a different change is still landing (PoweringOn/PoweringOff) it
// returns a transient error instead of sending a request the BMC may drop.
func (d *Driver) SetPower(ctx context.Context, action bmc.PowerAction) error {
	op := "power " + string(action)
	if !action.Valid() {
		return d.opErr(op, bmc.Permanent(fmt.Errorf("unknown power action %q: want on, off, soft-off, cycle or reset", action)))
	}
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	if err := d.setPower(ctx, action); err != nil {
		return d.opErr(op, err)
	}
	return nil
}

func (d *Driver) setPower(ctx context.Context, action bmc.PowerAction) error {
	doc, err := d.recentSystem(ctx)
	if err != nil {
		return err
	}
	if err := doc.errPowerState(); err != nil {
		// Nothing is sent on a state the driver cannot read back.
		return err
	}
	if err := d.loadResetTypes(ctx, doc); err != nil {
		return err
	}
	cur := powerState(doc.PowerState)
	plan, err := planPower(action, cur, d.resetTypes, d.refused)
	if err != nil {
		return err
	}
	switch {
	case plan.noop:
		return nil
	case plan.wait:
		return bmc.Transient(fmt.Errorf("the server is %s: a power change is still landing; retry once it settled", cur))
	}
	for _, t := range plan.candidates {
		err := d.reset(ctx, doc.ResetTarget, t)
		if err == nil {
			return nil
		}
		var se *StatusError
		if !errors.As(err, &se) || !se.refused() {
			return err
		}
		d.refused[t] = true
		d.logger(ctx).Info("BMC refused an advertised reset type; falling back", "resetType", t, "status", se.StatusCode)
	}
	if !plan.offThenOn {
		return fmt.Errorf("the BMC refused every reset type for %s: %w", action, bmc.ErrNotSupported)
	}
	return d.offThenOn(ctx, doc.ResetTarget)
}

// loadResetTypes reads the advertised reset types from the ActionInfo when
// the system names one instead of AllowableValues (once per connection).
func (d *Driver) loadResetTypes(ctx context.Context, doc systemDoc) error {
	if d.resetTypes != nil || doc.ResetInfo == "" {
		return nil
	}
	types, err := d.allowedValues(ctx, nil, doc.ResetInfo, "ResetType")
	if err != nil {
		return fmt.Errorf("read reset types: %w", err)
	}
	d.resetTypes = types
	return nil
}

// reset POSTs ComputerSystem.Reset, without If-Match (actions do not need
// it and some BMCs reject it), and without retrying: the caller re-reads
// the state before trying again.
func (d *Driver) reset(ctx context.Context, target, resetType string) error {
	if target == "" {
		target = d.systemURI + "/Actions/ComputerSystem.Reset"
	}
	return d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.Post(target, map[string]string{"ResetType": resetType})
		drain(resp)
		return err
	})
}

// offThenOn emulates a cycle: ForceOff, wait until the BMC reports Off
// (a second request while the first is pending may be dropped), then On.
func (d *Driver) offThenOn(ctx context.Context, target string) error {
	d.logger(ctx).Info("emulating power cycle as ForceOff, then On")
	if err := d.reset(ctx, target, "ForceOff"); err != nil {
		return err
	}
	if err := d.waitFor(ctx, bmc.PowerOff); err != nil {
		return err
	}
	on := "On"
	if d.refused["On"] || (d.resetTypes != nil && !slices.Contains(d.resetTypes, "On")) {
		on = "ForceOn"
	}
	return d.reset(ctx, target, on)
}

// waitFor polls the power state until it is want, fast at first (4/s) and
// backing off to 1/s, for at most Options.SettleTimeout.
func (d *Driver) waitFor(ctx context.Context, want bmc.PowerState) error {
	deadline := d.s.opts.Clock.Now().Add(d.s.opts.SettleTimeout)
	interval := 250 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.s.opts.Clock.After(interval):
		}
		doc, err := d.readSystem(ctx)
		if err == nil {
			err = doc.errPowerState()
		}
		if err != nil {
			return err
		}
		if powerState(doc.PowerState) == want {
			return nil
		}
		if !d.s.opts.Clock.Now().Before(deadline) {
			return bmc.Transient(fmt.Errorf("the server did not reach %s within %s (it is %s)", want, d.s.opts.SettleTimeout, powerState(doc.PowerState)))
		}
		interval = min(interval*3/2, time.Second)
	}
}
