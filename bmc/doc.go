// Package bmc defines how bmckit talks to baseboard management controllers:
// the [Endpoint] a BMC is reached at, the [Credentials] used, the small
// [Driver] interface every protocol implements plus one optional interface per
// capability, the [Dialer] that opens drivers, and the error contract.
//
// # Addresses
//
// [ParseEndpoint] accepts the Metal3-style URLs users know:
//
//	redfish://host[:port]/redfish/v1/Systems/ID   (HTTPS, certificate verified)
//	redfish+https://host[:port]/...               (HTTPS)
//	redfish+http://host[:port]/...                (plain HTTP)
//	ipmi://host[:port]                            (IPMI v2.0 lanplus, port 623)
//
// Any of them may end in a query of per-endpoint driver options,
// e.g. ipmi://10.0.0.6?cipher=3 or redfish://10.0.0.5/redfish/v1/Systems/1?bootOnce=emulate;
// see [Endpoint.Options].
//
// # Capabilities
//
// Every driver implements [Driver] (power). Boot override, virtual media and
// BMC reset are optional interfaces found by type assertion:
// [BootOverrideSetter], [BootOverrideGetter], [VirtualMedia], [BMCResetter],
// [StatsReporter], [SystemOpener], [PowerWatcher] (the BMC announces
// power changes, e.g. Redfish Server-Sent Events, so callers poll less), and
// [LastResetReader] (when the system last reset, the evidence that a power
// cycle landed), [HealthReader] and [SystemStatusReader] (the health of the
// system, its chassis and manager; power and health from one request), and
// [EventLogReader] and [EventLogClearer] (the system's and the manager's
// event logs, newest first, paged by [PageLog]), [LocatorLED] (the locator
// LED, read back where the BMC reports it), [NMISender] (a diagnostic
// interrupt to the host; docs/indicator-nmi.md) and [AccountManager] (the
// BMC's local accounts and password policy; [GeneratePassword] makes a
// password that fits it). A driver that implements an interface but whose BMC lacks
// the feature returns an error wrapping [ErrNotSupported]; [Capability] names
// such features for the fake BMC and the conformance suite.
//
// # Errors
//
// Drivers return [*OpError] wrapping the cause. [ErrUnauthorized] and
// [ErrNotSupported] are permanent; [IsTransient] classifies everything else
// (timeouts, resets, 5xx are transient; validation errors permanent).
// Credentials never appear in errors: [Credentials] redacts its password in
// every printed form, and [ParseEndpoint] refuses URLs carrying user info
// or a credential-like option (password, user, token, ...) in the query,
// so a password typed into a URL is refused before a job stores it.
// Errors and logs print an address as [Endpoint.Redacted] (no query);
// [OpError] redacts whatever address it is given ([RedactURL]).
package bmc
