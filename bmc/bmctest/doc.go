// Package bmctest is the conformance suite every [bmc.Driver] must pass:
// the in-tree Redfish and IPMI drivers, the fake, and users' own drivers.
//
// # Running it
//
// Call [Run] from a test with the peer's [Options] and a factory that
// returns a fresh [Target] (an open driver) for each subtest:
//
//	func TestConformance(t *testing.T) {
//		bmctest.Run(t, bmctest.Options{
//			Unsupported: []bmctest.Capability{bmc.CapabilityVirtualMediaUSB},
//		}, func(t *testing.T) bmctest.Target {
//			sim := startSimulator(t)        // a peer per subtest, or a shared one
//			drv, err := mydriver.Dial(t.Context(), sim.Endpoint(), sim.Credentials())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return bmctest.Target{Driver: drv}
//		})
//	}
//
// The suite closes each driver when its subtest ends. Subtests do not
// assume a starting state: each first drives the server where it needs it
// (with the driver itself), so a factory may hand out drivers on one shared
// peer. Subtests run sequentially.
//
// # What it checks
//
//   - Power: on, off, soft-off, cycle and reset, each followed by polling
//     PowerState until the target state is read (within
//     [Options.SettleTimeout], [Options.PollInterval] apart, no sleeps);
//     repeats are no-op successes (off on off, on on on); cycle and reset on
//     a server that is off end On; an undefined action is a permanent error;
//     every state read is one of bmc's typed PowerState constants.
//   - Boot override: every device in [Options.BootDevices], once and
//     persistent, in every mode of [Options.BootModes], set twice and read
//     back where the driver implements [bmc.BootOverrideGetter]; an undefined
//     device is a permanent error.
//   - Virtual media (CD and USB): insert and read back, insert twice, insert
//     replacing an image, eject and read back, eject an empty device.
//   - UEFI HTTP boot (bmc.BootDeviceUEFIHTTP with a URI from
//     [Options.HTTPBootURIs]): once, persistent and in UEFI mode, set twice
//     and read back with its URI; a second URI replaces the first; another
//     device set afterwards reads back without a URI; a URI with another
//     device is a permanent error.
//   - BMC reset (warm and cold): accepted, the BMC answers again on the
//     same driver and (with [Target.Dial]) through a new session, and the
//     server's power is unchanged (On).
//   - Firmware update ([bmc.FirmwareUpdater], with [Target.Firmware] set):
//     an update is started, its task followed to its end (with the reset
//     the BMC asks for) and the component's version read back; a started
//     update is found again by its image, through a new session where
//     [Target.Dial] is set; an image never started is not found; an image
//     URI that is not http(s) is refused with a permanent error.
//   - Unsupported capabilities: for each capability in [Options.Unsupported]
//     the methods needing it return a permanent error wrapping
//     [bmc.ErrNotSupported].
//   - Context: every method called with an already cancelled, or already
//     expired, ctx returns an error wrapping context.Canceled (or
//     context.DeadlineExceeded), without hanging; with a ctx whose
//     [bmc.Fence] refuses, it returns an error wrapping [bmc.ErrFenced] (the
//     driver asks [bmc.Admit] before each request it writes).
//   - Credentials (with [Target.Dial] and [Target.Credentials] set): a wrong
//     password or an unknown user is refused, at Dial or at the first
//     request, with a permanent error wrapping [bmc.ErrUnauthorized]. Both
//     stay within the protocol's limits ([Options.MaxUsername],
//     [Options.MaxPassword]; IPMI's 16 and 20 bytes by default), so the
//     refusal comes from the peer, not from a length check in the driver.
//   - Concurrency: reads from several goroutines on one driver all succeed
//     (run with -race to catch unsynchronized driver state).
//   - Close is idempotent; Stats (where implemented) counts requests.
//   - Every error returned is a [*bmc.OpError], and none contains the
//     wrong password the suite tries or (when it is distinctive: at least
//     5 bytes mixing letters with digits or symbols) the password of
//     [Target.Credentials].
//
// # Selecting subtests
//
// Names are stable (see [Run]), so `go test -run 'Conformance/Power/'` runs
// the power checks and [Options.Skip] removes the ones unsafe on a peer.
// Subtests for an interface the driver does not implement, or for a
// capability the peer lacks, skip with a message.
//
// # Clocks
//
// A peer that models delays on a manually advanced clock sets
// [Target.Advance]; the suite calls it between polls, so delays of seconds
// pass in microseconds.
package bmctest
