package ipmi

import (
	"context"
	"errors"
	"fmt"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// ErrCipherSuiteMismatch is wrapped by the error of a session attempt
// whose Open Session the BMC answered with algorithms other than those of
// the cipher suite asked for, e.g. suite 3's HMAC-SHA1 to a request for
// suite 17 (pyghmi's BMC and older firmwares do this). The driver never
// uses substituted algorithms: it drops that session and opens a fresh one
// with the next suite allowed (Options.CipherSuites or ?cipher=), so with
// the defaults (17, then 3) such a BMC is reached on suite 3. A dial fails
// with a permanent error wrapping it only when no allowed suite was
// negotiated as asked for.
var ErrCipherSuiteMismatch = errors.New("the BMC answered with other algorithms than the cipher suite asked for")

// ErrUnknownUser is wrapped, together with bmc.ErrUnauthorized, by the
// (permanent) error of a dial the BMC refused with RMCP+ status 0Dh,
// "unauthorized name": it has no enabled user by the name given (the
// driver asks for a name-only lookup, so the privilege is not the cause).
// A wrong password is a different refusal (the RAKP authentication code
// does not match) and does not wrap it. The error names the user, never
// the password.
var ErrUnknownUser = errors.New("the BMC has no enabled user by this name (RMCP+ status 0Dh, unauthorized name): check the user name")

// checkAlgorithms compares the algorithms of an Open Session Response with
// those of the suite requested.
func checkAlgorithms(suite types.CipherSuiteID, auth, integrity, crypt uint8) error {
	wa, wi, wc, _ := types.GetCipherSuiteAlgorithms(suite)
	ga, gi, gc := types.AuthAlg(auth&0x3f), types.IntegrityAlg(integrity&0x3f), types.CryptAlg(crypt&0x3f)
	if ga == wa && gi == wi && gc == wc {
		return nil
	}
	offered := "no standard cipher suite"
	for id := types.CipherSuiteID(0); id <= 19; id++ {
		if a, i, c, ok := types.GetCipherSuiteAlgorithms(id); ok && a == ga && i == gi && c == gc {
			offered = fmt.Sprintf("cipher suite %d", id)
			break
		}
	}
	return fmt.Errorf("%w: requested cipher suite %d (%s, %s, %s), the BMC offered %s, %s, %s (%s); substituted algorithms are never used",
		ErrCipherSuiteMismatch, suite, wa, wi, wc, ga, gi, gc, offered)
}

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
		case types.RmcpStatusCodeUnauthorizedName:
			return fmt.Errorf("%w: %w: %w", bmc.ErrUnauthorized, ErrUnknownUser, err), kindBMC
		case types.RmcpStatusCodeInvalidIntegrityCheckValue:
			return fmt.Errorf("%w (wrong password or BMC key: the BMC found the RAKP authentication code wrong): %w", bmc.ErrUnauthorized, err), kindBMC
		case types.RmcpStatusCodeInvalidRole,
			types.RmcpStatusCodeUnauthorizedRoleOfPriLevel, types.RmcpStatusCodeInvalidNameLength,
			types.RmcpStatusCodeUnauthorizedGUID:
			return fmt.Errorf("%w: %w", bmc.ErrUnauthorized, err), kindBMC
		case types.RmcpStatusCodeNoResToCreateSess, types.RmcpStatusCodeNoResToCreateSessAtRole:
			return bmc.Transient(fmt.Errorf("the BMC has no free session slot: %w", err)), kindBMC
		}
		if rs.StatusCode() > types.RmcpStatusCodeIllegalParameter {
			// Not a code IPMI v2.0 defines (table 13-15): a corrupted
			// or stray reply rather than the BMC's answer.
			return bmc.Transient(fmt.Errorf("undefined RMCP+ status code: %w", err)), kindBMC
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
		if undefinedCompletionCode(uint8(re.CompletionCode())) {
			return bmc.Transient(fmt.Errorf("undefined completion code: %w", err)), kindBMC
		}
		return bmc.Permanent(err), kindBMC
	}
	// Anything else failed below the IPMI layer: UDP errors, timeouts with
	// no matching reply, undecodable packets. go-ipmi does not export its
	// "no datagram matched" error, so these are marked transient here.
	return bmc.Transient(err), kindTransport
}

// undefinedCompletionCode reports whether IPMI v2.0 (table 5-2) leaves cc
// undefined: 7Fh, BFh and the reserved D7h-FEh. OEM (01h-7Eh) and
// command-specific (80h-BEh) codes are defined by the BMC or the command.
func undefinedCompletionCode(cc uint8) bool {
	return cc == 0x7f || cc == 0xbf || cc >= 0xd7 && cc <= 0xfe
}
