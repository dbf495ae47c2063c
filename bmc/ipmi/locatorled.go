package ipmi

import (
	"context"
	"fmt"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.LocatorLED = (*Driver)(nil)

// LocatorLED implements [bmc.LocatorLED] with one Get Chassis Status
// request: the chassis identify state (byte 3 bits 5:4; timed and
// indefinite on both read On). A BMC that does not report it (bit 6
// clear, as ipmi_sim) fails with an error wrapping [bmc.ErrNotSupported].
func (d *Driver) LocatorLED(ctx context.Context) (bmc.LEDState, error) {
	var s bmc.LEDState
	err := d.do(ctx, "read locator LED", func(ctx context.Context, c *client.Client) error {
		st, err := d.chassisStatus(ctx, c)
		if err != nil {
			return err
		}
		if st.identify == "" {
			return fmt.Errorf("the BMC does not report the chassis identify state (Get Chassis Status byte 3, bit 6 clear): %w", bmc.ErrNotSupported)
		}
		s = st.identify
		return nil
	})
	return s, err
}

// SetLocatorLED implements [bmc.LocatorLED] with Chassis Identify (IPMI
// v2.0 section 28.5): On is "Force Identify On" (on until turned off), Off
// an interval of 0. LEDBlinking is NotSupported without a request: IPMI
// leaves how the chassis identifies itself to the chassis. A BMC that
// answers CCh (no Force Identify On: IPMI 1.5) or does not know the
// command fails with an error wrapping [bmc.ErrNotSupported].
func (d *Driver) SetLocatorLED(ctx context.Context, s bmc.LEDState) error {
	op := "set locator LED " + string(s)
	switch s {
	case bmc.LEDOn, bmc.LEDOff:
	case bmc.LEDBlinking:
		return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: fmt.Errorf("IPMI's Chassis Identify cannot ask for blinking (the chassis picks how it identifies itself): %w", bmc.ErrNotSupported)}
	default:
		return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: bmc.Permanent(fmt.Errorf("invalid locator LED state %q: want Off, On or Blinking", s))}
	}
	return d.do(ctx, op, func(ctx context.Context, c *client.Client) error {
		req := &chassis.ChassisIdentifyRequest{IdentifyInterval: 0, ForceIdentifyOn: s == bmc.LEDOn}
		err := d.exchange(ctx, c, req, &chassis.ChassisIdentifyResponse{})
		return refusedAsUnsupported(err, "Chassis Identify")
	})
}

// refusedAsUnsupported maps the answer of a BMC that refuses the data of
// an optional command (CCh invalid data field, C9h parameter out of
// range: a function it does not offer) to an error wrapping
// bmc.ErrNotSupported; other errors are returned as they are.
func refusedAsUnsupported(err error, what string) error {
	re, ok := types.IsResponseError(err)
	if ok && (re.CompletionCode() == types.CodeRequestDataFieldInvalid || re.CompletionCode() == types.CodeParameterOutOfRange) {
		return fmt.Errorf("the BMC refused %s (completion code %#02x): %w", what, uint8(re.CompletionCode()), bmc.ErrNotSupported)
	}
	return err
}
