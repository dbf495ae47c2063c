package ipmi

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.SecureBootManager = (*Driver)(nil)

// errNoSecureBoot is what the Secure Boot methods return: IPMI has no
// Secure Boot state (docs/secure-boot-boot-order.md).
func (d *Driver) errNoSecureBoot(op string) error {
	return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: fmt.Errorf("IPMI has no UEFI Secure Boot interface (use the BMC's Redfish service): %w", bmc.ErrNotSupported)}
}

// SecureBoot implements [bmc.SecureBootManager]: IPMI has none, so it fails
// with an error wrapping [bmc.ErrNotSupported], without a request.
func (d *Driver) SecureBoot(context.Context) (bmc.SecureBootState, error) {
	return bmc.SecureBootState{}, d.errNoSecureBoot("read Secure Boot")
}

// SetSecureBoot implements [bmc.SecureBootManager]: it fails with an error
// wrapping [bmc.ErrNotSupported], without a request.
func (d *Driver) SetSecureBoot(context.Context, bool) (bmc.SecureBootState, error) {
	return bmc.SecureBootState{}, d.errNoSecureBoot("set Secure Boot")
}

// ResetSecureBootKeys implements [bmc.SecureBootManager]: it fails with an
// error wrapping [bmc.ErrNotSupported], without a request.
func (d *Driver) ResetSecureBootKeys(context.Context, bmc.SecureBootResetKeys) (bmc.SecureBootState, error) {
	return bmc.SecureBootState{}, d.errNoSecureBoot("reset Secure Boot keys")
}
