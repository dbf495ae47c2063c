package redfish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.NMISender = (*Driver)(nil)

// nmiResetType is ComputerSystem.Reset's diagnostic interrupt ("the
// resource will generate a diagnostic interrupt", gofish's NmiResetType).
const nmiResetType = "Nmi"

// SendNMI implements [bmc.NMISender]: ComputerSystem.Reset with ResetType
// Nmi, after a read of the system (none when ctx's [bmc.ReadScope] holds a
// recent one) that shows it on. A BMC that lists its reset types
// (AllowableValues or the action's @Redfish.ActionInfo) without Nmi gets
// no POST; one that refuses it (501, 405, 400 ActionNotSupported) is
// remembered. Both fail with an error wrapping [bmc.ErrNotSupported].
func (d *Driver) SendNMI(ctx context.Context) error {
	const op = "send NMI"
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	if err := d.sendNMI(ctx); err != nil {
		return d.opErr(op, err)
	}
	return nil
}

func (d *Driver) sendNMI(ctx context.Context) error {
	doc, err := d.recentSystem(ctx)
	if err != nil {
		return err
	}
	if err := doc.errPowerState(); err != nil {
		return err
	}
	if err := d.nmiOffered(ctx, doc); err != nil {
		return err
	}
	if st := powerState(doc.PowerState); st != bmc.PowerOn {
		return bmc.Permanent(fmt.Errorf("the server is %s: a diagnostic interrupt needs a running host", st))
	}
	err = d.reset(ctx, doc.ResetTarget, nmiResetType)
	var se *StatusError
	if errors.As(err, &se) && se.refused() {
		d.refused[nmiResetType] = true
		return fmt.Errorf("the BMC refused ResetType %s (%d): %w", nmiResetType, se.StatusCode, bmc.ErrNotSupported)
	}
	return err
}

// nmiOffered is nil unless the BMC lists its reset types without Nmi, or
// refused it before on this connection.
func (d *Driver) nmiOffered(ctx context.Context, doc systemDoc) error {
	if err := d.loadResetTypes(ctx, doc); err != nil {
		return err
	}
	switch {
	case d.refused[nmiResetType]:
		return fmt.Errorf("the BMC refused ResetType %s earlier on this connection: %w", nmiResetType, bmc.ErrNotSupported)
	case d.resetTypes != nil && !slices.Contains(d.resetTypes, nmiResetType):
		return fmt.Errorf("the system's ComputerSystem.Reset lists no %s (it lists: %s): %w", nmiResetType, strings.Join(d.resetTypes, ", "), bmc.ErrNotSupported)
	}
	return nil
}
