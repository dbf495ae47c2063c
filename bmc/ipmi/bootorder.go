package ipmi

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.BootOrderManager = (*Driver)(nil)

// errNoBootOrder is what the boot order methods return: IPMI's boot flags
// (Set System Boot Options, parameter 5) name one device for the next boot
// or every boot, an override (bmc.BootOverrideSetter); there is no list of
// boot options and no order (docs/secure-boot-boot-order.md).
func (d *Driver) errNoBootOrder(op string) error {
	return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: fmt.Errorf("IPMI has no persistent boot order, only a boot device override (use the BMC's Redfish service): %w", bmc.ErrNotSupported)}
}

// BootOrder implements [bmc.BootOrderManager]: it fails with an error
// wrapping [bmc.ErrNotSupported], without a request.
func (d *Driver) BootOrder(context.Context) (bmc.BootOrder, error) {
	return bmc.BootOrder{}, d.errNoBootOrder("read boot order")
}

// SetBootOrder implements [bmc.BootOrderManager]: it fails with an error
// wrapping [bmc.ErrNotSupported], without a request.
func (d *Driver) SetBootOrder(context.Context, bmc.BootOrderChange) (bmc.BootOrder, error) {
	return bmc.BootOrder{}, d.errNoBootOrder("set boot order")
}
