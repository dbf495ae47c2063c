// Package ipmi is bmckit's IPMI v2.0 driver: RMCP+ ("lanplus") sessions over
// UDP in pure Go, on github.com/bougou/go-ipmi, needing no ipmitool binary.
//
// # Dialing
//
// Build a [Dialer] from [Options] (the zero value works) and register it for
// the "ipmi" protocol, so ipmi://host[:port] addresses reach it:
//
//	d, err := ipmi.NewDialer(ipmi.Options{})
//	var dialers bmc.SchemeDialer
//	dialers.Register("ipmi", d)
//
// Each [Driver] is one RMCP+ session, opened by Dial and logged out by
// Close. The driver tries the cipher suites of Options.CipherSuites in order
// (17, then 3 by default) without asking the BMC which it supports, because
// some BMCs (OpenIPMI's ipmi_sim) ignore that question; naming one suite
// uses exactly that one. Calls on one driver are serialized, since an IPMI
// session carries one outstanding request. A session idle longer than
// Options.IdleRelogin, or one whose last request got no answer, is
// re-established before the next call.
//
// Every IPMI request (handshake, command, logout) takes a token from one
// token bucket per endpoint, kept in the Dialer and shared by its sessions
// to that BMC: Options.RequestsPerSecond (50 by default; negative for none).
// Requests beyond it wait their turn within the call's ctx.
//
// # Semantics
//
// Power actions follow [bmc.PowerAction]: the driver reads Get Chassis
// Status first and sends the one Chassis Control command needed from there,
// nothing when the server is already in the target state, power up when
// cycle or reset is asked of a server that is off. IPMI reports only on and
// off, never a transitional state. Boot overrides use Set/Get System Boot
// Options parameter 5 (pxe, disk, cdrom, bios; once or persistent; EFI or
// legacy); BMC reset uses the App Cold/Warm Reset commands.
//
// Health ([bmc.HealthReader], [bmc.SystemStatusReader]) comes from the
// fault bits of the same Get Chassis Status request that reads power: one
// request, the chassis rated Critical for a power subsystem fault, Warning
// for a cooling, drive, interlock, lockout or intrusion bit, else OK.
// Health also reads the sensors: the SDR repository (cached while Get SDR
// Repository Info reports it unchanged) and one Get Sensor Reading per
// sensor, the BMC's threshold status as each one's health. The
// System Event Log is the one log ([bmc.EventLogReader],
// [bmc.EventLogClearer], system/SEL): read record by record (Get SEL
// Entry), newest first and paged by [bmc.PageLog]; cleared with a
// reservation, the erase followed until the BMC reports it complete. See
// docs/health-events.md.
//
// The locator LED ([bmc.LocatorLED]) is Chassis Identify, forced on or off,
// read from Get Chassis Status where the BMC reports the identify state
// (ipmi_sim does not); an NMI ([bmc.NMISender]) is Chassis Control "pulse
// diagnostic interrupt". See docs/indicator-nmi.md.
//
// # Errors
//
// Every error is a [*bmc.OpError]. A refused user name or password (RAKP
// authentication mismatch, unauthorized name) wraps [bmc.ErrUnauthorized]
// and comes back as soon as the BMC answers, without retries. An unknown
// user name (RAKP 2 status 0Dh, as real BMCs and ipmi_sim answer) also
// wraps [ErrUnknownUser] and the message names the user; a wrong password
// (the RAKP authentication code does not match) does not. A BMC that
// does not answer yields a transient error after (Retries+1)*Timeout per
// request, or as soon as ctx ends. Completion codes map to
// [bmc.ErrNotSupported] (invalid command, parameter not supported),
// transient (busy, initializing, unspecified) or permanent errors.
//
// # Testing
//
// Package [github.com/bmckit/bmckit/bmc/ipmi/ipmitest] starts IPMI peers on
// 127.0.0.1 for tests: go-ipmi's BMC in process, and OpenIPMI's ipmi_sim.
// See docs/ipmi.md for the design decisions.
package ipmi
