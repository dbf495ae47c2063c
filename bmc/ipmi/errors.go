package ipmi

import (
	"context"
	"errors"
	"fmt"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// errKind says what a failed exchange means for the session.
type errKind int

const (
	kindTransport errKind = iota // no usable reply: the session may be gone
	kindBMC                      // the BMC answered with an error
)

// classify maps an error from go-ipmi to bmckit's contract: credential and
// privilege refusals wrap bmc.ErrUnauthorized, unsupported commands
// bmc.ErrNotSupported, busy/initialising BMCs and transport failures are
// transient, and other refusals permanent. It also reports whether the BMC
// answered at all, so the driver knows when to re-open the session.
func classify(err error) (error, errKind) {
	if err == nil {
		return nil, kindBMC
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err, kindTransport
	}
	if errors.Is(err, client.ErrRAKPAuthentication) {
		return fmt.Errorf("%w (wrong password or BMC key: the RAKP authentication code did not match): %w", bmc.ErrUnauthorized, err), kindBMC
	}
	var rs *types.RmcpStatusError
	if errors.As(err, &rs) {
		switch rs.StatusCode() {
		case types.RmcpStatusCodeUnauthorizedName, types.RmcpStatusCodeInvalidRole,
			types.RmcpStatusCodeUnauthorizedRoleOfPriLevel, types.RmcpStatusCodeInvalidNameLength,
			types.RmcpStatusCodeInvalidIntegrityCheckValue, types.RmcpStatusCodeUnauthorizedGUID:
			return fmt.Errorf("%w: %w", bmc.ErrUnauthorized, err), kindBMC
		case types.RmcpStatusCodeNoResToCreateSess, types.RmcpStatusCodeNoResToCreateSessAtRole:
			return bmc.Transient(fmt.Errorf("the BMC has no free session slot: %w", err)), kindBMC
		}
		return bmc.Permanent(err), kindBMC
	}
	if re, ok := types.IsResponseError(err); ok {
		switch cc := re.CompletionCode(); cc {
		case types.CodeInvalidCommand, types.CodeInvalidCommandForLUN, types.CodeParameterNotSupported:
			return fmt.Errorf("%w: %w", bmc.ErrNotSupported, err), kindBMC
		case types.CodeInsufficientPrivilege:
			return fmt.Errorf("%w: the user's privilege level does not allow this command: %w", bmc.ErrUnauthorized, err), kindBMC
		case types.CodeNodeBusy, types.CodeProcessTimeout, types.CodeOutOfSpace, types.CodeCannotProvideResponse,
			types.CodeCannotProvideResponseBMCInitialize, types.CodeCannotProvideResponseFirmwareUpdate,
			types.CodeDestinationUnavailable, types.CodeUnspecifiedError:
			return bmc.Transient(err), kindBMC
		case types.CodeOK:
			// go-ipmi reports a reply it could not decode with code 00h.
			return bmc.Permanent(fmt.Errorf("undecodable reply from the BMC: %w", err)), kindBMC
		}
		return bmc.Permanent(err), kindBMC
	}
	// Anything else failed below the IPMI layer: UDP errors, timeouts with
	// no matching reply, undecodable packets. go-ipmi does not export its
	// "no datagram matched" error, so these are marked transient here.
	return bmc.Transient(err), kindTransport
}
