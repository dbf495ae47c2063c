package fake

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.NMISender = (*Driver)(nil)

// SendNMI implements [bmc.NMISender]: it counts the interrupt
// (State.NMIs) on a server that is on (a pending power change counts as
// landed where it leads). On a server that is off it fails with a
// permanent error; without [bmc.CapabilityNMI] with an error wrapping
// [bmc.ErrNotSupported]. Neither counts.
func (d *Driver) SendNMI(ctx context.Context) error {
	return d.do(ctx, MethodSendNMI, nil, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityNMI] {
			return fmt.Errorf("NMI: the BMC lacks %s: %w", bmc.CapabilityNMI, bmc.ErrNotSupported)
		}
		b.settle()
		if s := b.visible(); s != bmc.PowerOn {
			return bmc.Permanent(fmt.Errorf("NMI: the server is %s: a diagnostic interrupt needs a running host", s))
		}
		b.nmis++
		return nil
	})
}
