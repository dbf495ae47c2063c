package redfish

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.NeedChecker = (*Driver)(nil)

// CheckNeed implements [bmc.NeedChecker] with the rules the calls
// themselves apply before they send anything, on what the BMC advertises:
//
//   - Boot: the system's Boot properties (an override at all,
//     BootSourceOverrideMode for a mode, HttpBootUri for a URI) and
//     BootSourceOverrideTarget@Redfish.AllowableValues, as SetBootOverride
//     builds its PATCH;
//   - Power: a PowerState the system reports (a system without the
//     property cannot have its power verified), and the ComputerSystem.Reset types (inline AllowableValues or the
//     @Redfish.ActionInfo), checked as on a server that is on for off,
//     soft-off, cycle and reset (where they need a reset type) and as on
//     one that is off for on;
//   - Media: a virtual media device of the kind under the system or its
//     managers;
//   - BMCReset: the managing manager's Manager.Reset and its types;
//   - ClearLog: the log among the system's and the manager's
//     LogServices, with a LogService.ClearLog action;
//   - LocatorLED: LocationIndicatorActive or IndicatorLED on the system
//     or one of its chassis, and IndicatorLED (with Blinking among its
//     AllowableValues, where stated) for LEDBlinking;
//   - NMI: Nmi among the reset types, where the BMC lists them.
//   - SecureBoot: the system's SecureBoot link; for a key reset, the
//     resource's ResetKeys action listing the kind (one GET);
//   - BootOrder: Boot.BootOrder or Boot.BootOptions; for an HTTP boot
//     URI, Boot.HttpBootUri.
//
// What the BMC does not state (no AllowableValues, no ActionInfo) passes.
// Answers are remembered for the driver's life, so a job's tasks cost the
// reads of one; a failed read is not remembered.
func (d *Driver) CheckNeed(ctx context.Context, n bmc.Need) error {
	op := "check " + n.String()
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	key := needKey(n)
	if err, ok := d.needs[key]; ok {
		return err
	}
	err = d.checkNeed(ctx, n)
	if err != nil {
		err = d.opErr(op, err)
	}
	if err == nil || errors.Is(err, bmc.ErrNotSupported) {
		if d.needs == nil {
			d.needs = map[string]error{}
		}
		d.needs[key] = err
	}
	return err
}

func needKey(n bmc.Need) string {
	if n.Boot != nil {
		return fmt.Sprintf("boot %+v", *n.Boot)
	}
	return n.String()
}

func (d *Driver) checkNeed(ctx context.Context, n bmc.Need) error {
	switch {
	case n.Boot != nil:
		doc, err := d.knownSystem(ctx)
		if err != nil {
			return err
		}
		_, err = bootPatch(*n.Boot, doc)
		return err
	case n.Power != "":
		doc, err := d.knownSystem(ctx)
		if err != nil {
			return err
		}
		if doc.Power == powerAbsent {
			// No PowerState at all (iLO 6 1.70 style): the task could
			// never read its effect back. A null one may come back.
			return doc.errPowerState()
		}
		if err := d.loadResetTypes(ctx, doc); err != nil {
			return err
		}
		// The state the action needs a reset type in.
		state := bmc.PowerOn
		if n.Power == bmc.PowerActionOn {
			state = bmc.PowerOff
		}
		_, err = planPower(n.Power, state, d.resetTypes, d.refused)
		return err
	case n.Media != "":
		_, err := d.findMedia(ctx, n.Media)
		return err
	case n.BMCReset != "":
		_, _, err := d.managerReset(ctx, n.BMCReset)
		return err
	case n.ClearLog != nil:
		return d.checkClearLog(ctx, *n.ClearLog)
	case n.LocatorLED != "":
		l, err := d.locator(ctx)
		if err != nil {
			return err
		}
		_, err = l.patchBody(n.LocatorLED)
		return err
	case n.NMI:
		doc, err := d.knownSystem(ctx)
		if err != nil {
			return err
		}
		return d.nmiOffered(ctx, doc)
	case n.SecureBoot != nil:
		return d.checkSecureBoot(ctx, *n.SecureBoot)
	case n.BootOrder != nil:
		return d.checkBootOrder(ctx, *n.BootOrder)
	}
	return nil
}

// knownSystem is the last system document read, or a new read when there
// is none yet: what the system advertises (its Boot properties, its reset
// types) does not change between reads.
func (d *Driver) knownSystem(ctx context.Context) (systemDoc, error) {
	if d.sys.BootHas != nil {
		return d.sys, nil
	}
	return d.readSystem(ctx)
}
