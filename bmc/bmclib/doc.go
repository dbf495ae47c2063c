// Package bmclib adapts providers of bmclib v2
// (github.com/bmc-toolbox/bmclib/v2) to bmckit's [bmc.Driver], so hosts that
// rely on bmclib's provider ecosystem can plug a provider into bmckit's jobs.
//
// # Providers
//
// [New] wraps any value with bmclib's PowerStateGet and PowerSet methods
// (its PowerStateGetter and PowerSetter interfaces, in package
// github.com/bmc-toolbox/bmclib/v2/bmc); Open, Close,
// BootDeviceSet and BmcReset are used when the provider has them. The
// interfaces are declared here with the same method sets, so this package
// imports no bmclib package but the ipmitool provider: bmclib's root package
// and its Redfish providers do not build with the gofish version bmckit
// uses (see docs/ipmi.md).
//
// [IPMIToolDialer] dials bmclib's providers/ipmitool provider, which runs the
// ipmitool program (Debian package ipmitool) for every call.
//
// # Normalization
//
// bmclib reports power states as provider-specific strings ("Chassis Power
// is on", "on", "On", "PoweringOff", ...); [NormalizePowerState] maps them to
// [bmc.PowerState]. Power actions keep bmckit's semantics whatever the
// provider calls them: the adapter reads the state first and decides the
// one bmclib action to request (package bmc/powerplan), so "off" on a
// server that is off and "on" on one that is on send nothing, and cycle or
// reset on a server that is off send "on" (bmclib's providers differ there:
// ipmitool's "cycle" on an off server is refused by some BMCs, Redfish's
// "reset" means a graceful restart). bmclib's (ok bool, err error) results
// are folded into one error: ok false without an error is a failure.
//
// # Errors
//
// ipmitool reports failures as text; [IPMIToolDialer] classifies them (see
// its documentation). Errors are [*bmc.OpError] and never contain the
// password (bmclib passes it to ipmitool through the environment).
package bmclib
