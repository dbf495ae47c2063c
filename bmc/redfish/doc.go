// Package redfish is bmckit's Redfish driver, built on
// github.com/stmcginnis/gofish. A [Dialer] opens a [Driver] for endpoints
// whose Protocol is "redfish" (redfish://, redfish+https://, redfish+http://);
// register it on a [bmc.SchemeDialer]:
//
//	var d bmc.SchemeDialer
//	d.Register("redfish", redfish.NewDialer(redfish.Options{CACertPEM: caPEM}))
//
// An address may override some of the Dialer's [Options] for one BMC in its
// query: redfish://10.0.0.5/redfish/v1/Systems/1?bootOnce=emulate&events=off&timeout=10s
// (see [Dialer.DialDriver] for the names and values).
//
// Package [github.com/bmckit/bmckit/bmc/redfish/redfishtest] is a simulated
// BMC to test against.
//
// # Connections and sessions
//
// A Driver is one Redfish session over one kept-alive TCP (and TLS)
// connection: Dial reads the service root, logs in once (a session answered
// 201 with a body or 204 without; HTTP basic auth when the service offers no
// SessionService) and selects the system. Every later call reuses the token
// and the connection; Close logs out. When a session expires mid-job (401),
// the driver logs in again once and repeats the request; if that fails too,
// the error wraps [bmc.ErrUnauthorized]. Wrong credentials fail Dial at once
// with [bmc.ErrUnauthorized], never retried, and no error or log line carries
// the password.
//
// The system is the one named by the address path (/redfish/v1/Systems/ID,
// where ID may also be the system's UUID) or the only one; with several and
// none named, Dial fails listing them.
//
// # Several systems, one session
//
// A chassis manager, a multi-node service or an emulator serves many systems
// behind one endpoint. [Driver.OpenSystem] (the [bmc.SystemOpener]
// interface) returns a Driver for another system of the same service
// (same protocol, transport, host and port) that shares the session: no
// login, one GET of the system. Calls on one Driver are serialized; Drivers
// sharing a session run concurrently, over at most [Options.MaxConnections]
// connections (4 by default).
// When the session expires, the Drivers whose requests were rejected log in
// again once among them. Closing an opened Driver releases only its own
// state; closing the Driver that Dial returned logs out, and calls on the
// Drivers opened from it then fail with an error wrapping
// [bmc.ErrSessionExpired].
//
// # Cost on the wire
//
// Dial costs three requests (service root, session, system). PowerState and
// BootOverride are one GET of the system resource. SetPower is that GET plus
// one POST (none when the server already is where the action leads).
// SetBootOverride is one PATCH plus the read-back GET. OpenSystem is one GET.
// [Driver.Stats] counts the requests, TCP connections and logins of the
// Driver's own calls: each Driver sharing a session counts its share, the
// one Dial returned also the login and logout, and together they add up to
// the session's traffic. [Options.WrapTransport] wraps the
// HTTP transport (tracing, extra headers); it sees every request, logins and
// logouts included, with the ctx of the call that made it.
//
// # Request budget
//
// Every request to an endpoint (host:port) takes a token from one token
// bucket per endpoint, kept in the Dialer and shared by every session and
// system it opened there: [Options.RequestsPerSecond] (50 by default;
// negative for none) and [Options.RequestBurst] (1). Requests beyond it wait
// their turn, within their ctx and RequestTimeout, so many systems behind one
// slow BMC cannot flood it with polls; the wait shows in how late a change is
// seen, and in [bmc.Stats] Throttled and ThrottleWait.
//
// # Real BMCs
//
//   - Power: cycle and reset use the reset types the BMC advertises
//     (AllowableValues or ActionInfo); an advertised type it refuses (501,
//     405, 400 ActionNotSupported) is remembered and the next one tried, down
//     to ForceOff, wait until Off, On. While a change is still landing
//     (PoweringOn/PoweringOff) SetPower returns a transient error rather than
//     a request the BMC may silently drop.
//   - Boot override: the PATCH body holds only the fields being set. If-Match
//     is sent when an ETag is known; a BMC that rejects it gets the PATCH
//     again without (and never again), one that requires it gets a fresh
//     ETag. The read-back reports an ignored or reverted override as
//     [ErrOverrideNotApplied].
//   - UEFI HTTP boot (bmc.BootDeviceUEFIHTTP): BootSourceOverrideTarget
//     UefiHttp with HttpBootUri, read back with the URI. A BMC that does not
//     list UefiHttp among the allowed targets, or whose Boot has no
//     HttpBootUri (ComputerSystem before v1_9), gets no PATCH: the error
//     wraps bmc.ErrNotSupported.
//   - BMC reset: Manager.Reset (GracefulRestart for warm, ForceRestart for
//     cold), checked against the manager's advertised reset types. The BMC
//     forgets its sessions as it restarts, so Close does not log out after.
//   - Virtual media: the CD/DVD or USB device is found under the system or
//     its managers; insert ejects first and reads back Inserted and Image.
//     Actions go without If-Match; a device without InsertMedia/EjectMedia
//     (older Lenovo XCC) is changed by a PATCH of Image and Inserted.
//   - Locator LED: LocationIndicatorActive (ComputerSystem v1_13_0), else
//     the deprecated IndicatorLED, on the system or else its first chassis
//     that has one; blinking only through an IndicatorLED that allows it.
//     NMI: ComputerSystem.Reset with ResetType Nmi where the reset types
//     list it, on a server that is on. docs/indicator-nmi.md.
//   - Links are followed, never built: the Systems and Managers
//     collections come from the service root (HPE iLO's are lower-case).
//   - A system without PowerState fails power calls at once (NotSupported);
//     one reporting it null, transiently. docs/vendors.md lists the vendor
//     quirks, what the driver does about each, and the test that shows it.
//
// # Errors
//
// Every error is a [*bmc.OpError] naming the operation and the BMC. Redfish
// error answers are [*StatusError]. 401/403 wrap [bmc.ErrUnauthorized];
// 408, 429 and 5xx (but 501), resets and timeouts are transient; other 4xx,
// 501 and untrusted certificates are permanent. Idempotent GETs are retried
// [Options.Retries] times inside the driver; actions are not, the job runner
// retries them with back-off.
package redfish
