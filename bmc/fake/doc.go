// Package fake is a stateful, in-memory BMC for unit tests of code that
// drives BMCs through package bmc: a job runner, a controller, a CLI.
//
// # Servers and sessions
//
// [New] creates a [BMC]: the server-side state of one simulated BMC and the
// server behind it (power, boot override, virtual media per kind, the
// credentials it accepts). Code under test reaches it through a
// [bmc.Dialer]: the BMC itself ([BMC.Dial], for one server) or a [Fleet]
// (several fakes keyed by address). Every Dial is a login and returns a
// [Driver], one session; [BMC.Sessions] counts logins and open sessions, and
// its MaxOpen field tells a test whether two sessions were ever open on one
// BMC at once.
//
//	f := fake.NewFleet()
//	srv, err := f.AddNew("redfish://10.0.0.1/redfish/v1/Systems/1", fake.Options{Username: "admin", Password: "pw"})
//	...
//	runner, err := job.NewRunner(job.Config{
//		Store: memstore.New(),
//		StepperConfig: job.StepperConfig{
//			Dialer:      f,
//			Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "pw"}},
//		},
//	})
//
// (ExampleFleet_runner runs this, compiled and checked by go test.)
//
// Several fakes registered at one host and port model the systems behind one
// Redfish service: a driver from [Fleet.Dial] implements [bmc.SystemOpener],
// and [Driver.OpenSystem] returns drivers for the other systems there that
// share its session (no login; closing the dialed driver, or
// [BMC.ExpireSessions] on the dialed BMC, ends it for all). [Fleet.Logins]
// counts the logins per host and port, so a test can check that jobs on
// those systems shared one.
//
// # Semantics
//
// The [Driver] implements [bmc.Driver], [bmc.BootOverrideSetter],
// [bmc.BootOverrideGetter], [bmc.VirtualMedia], [bmc.BMCResetter],
// [bmc.LastResetReader] (the time of the last boot, on the fake's clock) and
// [bmc.StatsReporter] with the semantics documented on [bmc.PowerAction]:
// repeats are no-op successes, cycle and reset on a server that is off power
// it on, soft-off lands after its own delay (or never, with
// [Options.SoftOffIgnored]). Power changes land after
// [Options.PowerTransition], reported meanwhile as [bmc.PowerPoweringOn] or
// [bmc.PowerPoweringOff]; a one-time boot override is consumed by the next
// boot, as on real BMCs. Every error is a [*bmc.OpError]; a cancelled ctx
// fails the call with an error wrapping ctx.Err(), also while waiting out
// [Options.Latency].
//
// # Time
//
// Latency and transitions are measured on [Options.Clock], so a test can
// drive them with a manually advanced clock instead of sleeping: a pending
// transition lands on the first read after its end time. Nothing runs in the
// background. [Clock] is any value with Now and After, such as
// k8s.io/utils/clock/testing.FakeClock or clockwork's fake clock; with a
// manual clock, Latency waits until the clock is advanced.
//
// # Faults
//
// [Options.Unsupported] removes capabilities (the methods then return an
// error wrapping [bmc.ErrNotSupported]). [BMC.SetHook] installs a [Hook] per
// [Method] (like controller-runtime's client interceptor) that can fail a
// call, block it, or change the state under it; [BMC.FailNext] fails the next
// n calls. Mark injected errors with [bmc.Transient] to test retries.
// [BMC.ExpireSessions] ends every session; [Options.MaxSessions] refuses
// logins beyond a session limit; [Options.DropDuringTransition] drops power
// requests that arrive during a pending change; [Options.IgnoreOnceOverride]
// drops one-time boot overrides; [Options.BMCResetDowntime] makes the BMC
// unreachable for a while after ResetBMC. UEFI HTTP boot from a URI
// (bmc.BootDeviceUEFIHTTP) works unless the BMC lacks bmc.CapabilityBootHTTP.
//
// # Conformance
//
// The fake passes the driver conformance suite of package bmctest in every
// option set its tests try (instant, delayed on a fake clock, delayed on the
// wall clock with dropped requests, capabilities removed, soft-off ignored).
//
// # Inspection
//
// [BMC.Calls] is the call log (method, arguments, session, time, error),
// bounded by [Options.CallLogSize];
// [BMC.State] is a snapshot of the server; [BMC.SetPower],
// [BMC.SetBootOverride] and [BMC.SetMedia] set state directly. Passwords
// never appear in the log or in errors.
package fake
