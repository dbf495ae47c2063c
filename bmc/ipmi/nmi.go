package ipmi

import (
	"context"
	"fmt"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.NMISender = (*Driver)(nil)

// SendNMI implements [bmc.NMISender] with Get Chassis Status (the host
// must be on) and Chassis Control 04h, "pulse Diagnostic Interrupt" (IPMI
// v2.0 table 28-4). A BMC that refuses it (ipmi_sim answers CCh, go-ipmi's
// server C9h) fails with an error wrapping [bmc.ErrNotSupported].
func (d *Driver) SendNMI(ctx context.Context) error {
	return d.do(ctx, "send NMI", func(ctx context.Context, c *client.Client) error {
		state, err := d.powerState(ctx, c)
		if err != nil {
			return fmt.Errorf("read power state first: %w", err)
		}
		if state != bmc.PowerOn {
			return bmc.Permanent(fmt.Errorf("the server is %s: a diagnostic interrupt needs a running host", state))
		}
		req := &chassis.ChassisControlRequest{ChassisControl: chassis.ChassisControlDiagnosticInterrupt}
		err = d.exchange(ctx, c, req, &chassis.ChassisControlResponse{})
		return refusedAsUnsupported(err, "Chassis Control pulse diagnostic interrupt")
	})
}
