package bmc

import "context"

// NMISender is implemented by drivers that can send the host a diagnostic
// interrupt (NMI), which makes a hung operating system write a crash dump
// (Redfish ComputerSystem.Reset with ResetType Nmi; IPMI Chassis Control
// "pulse diagnostic interrupt"). An NMI changes no state the BMC reports,
// so it cannot be read back (docs/indicator-nmi.md).
//
// SendNMI returns once the BMC accepted the interrupt. It is not
// idempotent: each call is one more interrupt. It needs a running host:
// on a server that is off it fails with a permanent error that says so,
// sending nothing that changes state. A BMC that does not offer it
// ([CapabilityNMI]) fails with an error wrapping [ErrNotSupported]. Safe
// for concurrent use.
type NMISender interface {
	SendNMI(ctx context.Context) error
}
