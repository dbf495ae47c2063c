package bmctest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/bmckit/bmckit/bmc"
)

// Target is what the factory passed to [Run] returns for one subtest.
type Target struct {
	// Driver is an open driver on the peer. The suite closes it when the
	// subtest ends (Close is idempotent, so the factory may also register its
	// own cleanup). Required.
	Driver bmc.Driver

	// Dial, when set, opens another driver on the same peer with the given
	// credentials; with Credentials it enables the Dial/... subtests (wrong
	// credentials are refused with bmc.ErrUnauthorized). Defaults to nil:
	// those subtests skip.
	Dial func(ctx context.Context, creds bmc.Credentials) (bmc.Driver, error)

	// Credentials are the peer's good credentials. Their password (and the
	// wrong one Dial/WrongPassword tries) must never appear in an error the
	// driver returns: every subtest checks, for the good password only when
	// it is distinctive (at least 5 bytes mixing letters with digits or
	// symbols; a common word such as "password" appears in honest error
	// text). Defaults to none.
	Credentials bmc.Credentials

	// Firmware, when set, is the update the FirmwareUpdate/... subtests
	// install (bmc.FirmwareUpdater); each installs it once (on a fresh
	// peer per subtest, or one where the component can be updated
	// repeatedly). Defaults to nil: those subtests skip.
	Firmware *FirmwareTarget

	// Health, when set, says what health the peer holds (Health/...
	// compare it with what the driver reads) and may change it. Defaults
	// to nil: only the shape is checked.
	Health *HealthPeer

	// Logs, when set, says what the peer's event logs hold (Logs/...
	// compare it with what the driver reads) and may add entries.
	// Defaults to nil: only the shape is checked.
	Logs *LogPeer

	// Events, when set, says the peer offers event subscriptions and what
	// it holds (Events/... run only then). Defaults to nil: they skip.
	Events *EventPeer

	// LocatorLED, when set, returns the state of the locator LED as the
	// peer shows it (LocatorLED/... compare it with what was set, also
	// where the driver cannot read the LED back). Defaults to nil.
	LocatorLED func() bmc.LEDState

	// NMIs, when set, returns how many NMIs the peer received (NMI/...
	// check that one SendNMI is one NMI, and that a refused one is none).
	// Defaults to nil.
	NMIs func() int

	// Advance, when set, is called after every read-back that has not yet
	// shown the awaited state, before the next poll. A peer whose delays run
	// on a manually advanced clock (a fake with an injected clock) moves its
	// clock forward here. Defaults to nothing.
	Advance func()
}

// Run runs the conformance suite: one subtest per behaviour, each with a
// fresh target from newTarget (called inside the subtest, so it may use
// t.Cleanup, t.TempDir and t.Skip). opts describes the peer.
//
// Subtest names are stable, so one behaviour can be selected with -run or
// -skip, or listed in [Options.Skip]:
//
//	Power/{On,OnWhenOn,Off,OffWhenOff,SoftOff,SoftOffWhenOff,Cycle,CycleWhenOff,Reset,ResetWhenOff,InvalidAction}
//	BootOverride/<device>-<once|persistent>-<mode|unchanged>, BootOverride/InvalidDevice
//	BootHTTP/{once,persistent,uefi,ReplacesURI,ThenPXE,URIWithOtherDevice}
//	VirtualMedia/<cd|usb>/{InsertEject,InsertTwice,InsertReplaces,EjectEmpty}
//	ResetBMC/{warm,cold}
//	LastResetTime/ChangesWithCycle
//	FirmwareUpdate/{InstallAndVerify,FindAfterStart,FindNothing,InvalidImage}
//	Inventory/Read
//	BIOS/{Read,UnknownAttributeRefused,InvalidValueRefused,ReadOnlyRefused,SetCurrentIsNoop,ApplyAfterBoot}
//	Health/{Read,Changes,SystemStatus}
//	SecureBoot/{Read,SetCurrentIsNoop,ApplyAfterBoot,ResetKeysNotOffered}
//	BootOrder/{Read,UnknownOptionRefused,SetCurrentIsNoop,ApplyAfterBoot,EnableOption,HTTPBootURI}
//	Logs/{List,Read,Paging,InvalidQuery,Clear}
//	Events/{Subscribe,List,Unsubscribe,TestEvent}
//	LocatorLED/{OnOff,Blinking,Idempotent,InvalidState}
//	NMI/{Send,ServerOff}
//	Accounts/{List,Policy,CreateLoginUpdateDelete,UpdateRole,UnknownID}
//	Unsupported/<capability>
//	Needs/{Advertised,Lacking}
//	Context/{Canceled,DeadlineExceeded}/<method>
//	Dial/{WrongPassword,WrongUser,Again}
//	Concurrency/Reads
//	Close/Idempotent
//	Stats/CountsRequests
//
// Subtests for an optional interface the driver does not implement, or for a
// capability listed in [Options.Unsupported], skip with a message saying why.
func Run(t *testing.T, opts Options, newTarget func(t *testing.T) Target) {
	t.Helper()
	s := &suite{opts: opts.withDefaults(), newTarget: newTarget}
	s.group(t, "Power", s.power)
	s.group(t, "BootOverride", s.bootOverride)
	s.group(t, "BootHTTP", s.bootHTTP)
	s.group(t, "VirtualMedia", s.virtualMedia)
	s.group(t, "ResetBMC", s.resetBMC)
	s.group(t, "LastResetTime", s.lastResetTime)
	s.group(t, "FirmwareUpdate", s.firmwareUpdate)
	s.group(t, "Inventory", s.inventory)
	s.group(t, "BIOS", s.bios)
	s.group(t, "Health", s.health)
	s.group(t, "SecureBoot", s.secureBoot)
	s.group(t, "BootOrder", s.bootOrder)
	s.group(t, "Logs", s.logs)
	s.group(t, "Events", s.events)
	s.group(t, "LocatorLED", s.locatorLED)
	s.group(t, "NMI", s.nmi)
	s.group(t, "Accounts", s.accounts)
	s.group(t, "Unsupported", s.unsupported)
	s.group(t, "Needs", s.needs)
	s.group(t, "Context", s.context)
	s.group(t, "Dial", s.dial)
	s.group(t, "Concurrency", s.concurrency)
	s.group(t, "Close", func(t *testing.T, path string) {
		s.run(t, path, "Idempotent", s.closeIdempotent)
	})
	s.group(t, "Stats", func(t *testing.T, path string) {
		s.run(t, path, "CountsRequests", s.statsCountsRequests)
	})
}

type suite struct {
	opts      Options
	newTarget func(t *testing.T) Target
}

// group runs a subtest that only holds further subtests.
func (s *suite) group(t *testing.T, name string, body func(t *testing.T, path string)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		if s.opts.skipped(name) {
			t.Skipf("bmctest: %s is listed in Options.Skip", name)
		}
		body(t, name)
	})
}

// tcase is one subtest's context: the target and the suite's options.
type tcase struct {
	*testing.T
	opts    Options
	drv     bmc.Driver
	advance func()
	target  Target
	secrets []string
}

// wrongPassword is the password Dial/WrongPassword tries: distinctive (no
// word an error message would contain, so the leak check cannot mistake
// text for a leak), within max bytes, and not the good one.
func wrongPassword(creds bmc.Credentials, max int) string {
	return differentWithin("Zq7-bmctest-Xw3", creds.Password, max)
}

// unknownUser is the user name Dial/WrongUser tries, within max bytes and
// not the good one.
func unknownUser(creds bmc.Credentials, max int) string {
	return differentWithin("bmctest-nobody", creds.Username, max)
}

// differentWithin returns s cut to max bytes, changed in its last byte if
// that equals avoid.
func differentWithin(s, avoid string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	if s == avoid {
		b := []byte(s)
		b[len(b)-1] ^= 0x01
		s = string(b)
	}
	return s
}

// distinctive reports whether the leak check can look for password p in
// error text without mistaking ordinary words for a leak: at least 5 bytes
// mixing letters with digits or symbols. "calvin" or "password" would be
// found in messages that leak nothing ("wrong password").
func distinctive(p string) bool {
	var letters, others int
	for _, r := range p {
		if unicode.IsLetter(r) {
			letters++
		} else {
			others++
		}
	}
	return len(p) >= 5 && letters > 0 && others > 0
}

// run runs one leaf subtest with a fresh target.
func (s *suite) run(t *testing.T, parent, name string, body func(tc *tcase)) {
	t.Helper()
	path := parent + "/" + name
	t.Run(name, func(t *testing.T) {
		if s.opts.skipped(path) {
			t.Skipf("bmctest: %s is listed in Options.Skip", path)
		}
		tg := s.newTarget(t)
		if tg.Driver == nil {
			t.Fatal("bmctest: the factory returned a Target without a Driver")
		}
		t.Cleanup(func() {
			if err := tg.Driver.Close(context.Background()); err != nil {
				t.Errorf("bmctest: Close after the subtest: %v", err)
			}
		})
		tc := &tcase{T: t, opts: s.opts, drv: tg.Driver, advance: tg.Advance, target: tg}
		if tg.Credentials != (bmc.Credentials{}) {
			tc.secrets = []string{wrongPassword(tg.Credentials, s.opts.MaxPassword)}
			switch p := tg.Credentials.Password; {
			case distinctive(p):
				tc.secrets = append(tc.secrets, p)
			case p != "":
				t.Logf("bmctest: the leak check does not look for Target.Credentials.Password in errors: it is not distinctive (at least 5 bytes mixing letters with digits or symbols), so ordinary words could be taken for a leak; only the wrong password the suite tries is looked for")
			}
		}
		body(tc)
	})
}

// ctx returns a context for one call sequence, ended with the subtest.
func (tc *tcase) ctx() context.Context { return tc.Context() }

// requireOpError fails unless err is a *bmc.OpError.
func (tc *tcase) requireOpError(what string, err error) {
	tc.Helper()
	tc.noSecret(what, err)
	var oe *bmc.OpError
	if !errors.As(err, &oe) {
		tc.Errorf("%s: error %q (%T) is not a *bmc.OpError", what, err, err)
	}
}

// requireNotSupported fails unless err wraps bmc.ErrNotSupported inside a
// *bmc.OpError.
func (tc *tcase) requireNotSupported(what string, err error) {
	tc.Helper()
	if err == nil {
		tc.Errorf("%s: succeeded; the peer lacks it (Options.Unsupported), want an error wrapping bmc.ErrNotSupported", what)
		return
	}
	if !errors.Is(err, bmc.ErrNotSupported) {
		tc.Errorf("%s: error %q does not wrap bmc.ErrNotSupported", what, err)
	}
	if bmc.IsTransient(err) {
		tc.Errorf("%s: error %q is classified transient; ErrNotSupported must be permanent", what, err)
	}
	tc.requireOpError(what, err)
}

// noErr fails the subtest at once when err is not nil.
func (tc *tcase) noErr(what string, err error) {
	tc.Helper()
	if err != nil {
		tc.noSecret(what, err)
		tc.Fatalf("%s: %v", what, err)
	}
}

// noSecret fails when err's message, or its %+v or %#v form, contains a
// password.
func (tc *tcase) noSecret(what string, err error) {
	tc.Helper()
	if err == nil {
		return
	}
	for _, form := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		for _, sec := range tc.secrets {
			if strings.Contains(form, sec) {
				tc.Errorf("%s: the error leaks a password: %s", what, strings.ReplaceAll(form, sec, "<password>"))
				return
			}
		}
	}
}

var knownStates = map[bmc.PowerState]bool{
	bmc.PowerOn: true, bmc.PowerOff: true, bmc.PowerPoweringOn: true, bmc.PowerPoweringOff: true, bmc.PowerUnknown: true,
}

// readPower reads the power state once and checks it is one of bmc's typed
// states.
func (tc *tcase) readPower() (bmc.PowerState, error) {
	tc.Helper()
	st, err := tc.drv.PowerState(tc.ctx())
	if err != nil {
		tc.requireOpError("PowerState", err)
		return st, err
	}
	if !knownStates[st] {
		tc.Fatalf("PowerState returned %q, which is not one of bmc's PowerState constants; map protocol strings to them", st)
	}
	return st, nil
}

// waitPower polls PowerState until it reads want, failing after
// SettleTimeout. Transient errors are retried; permanent ones fail at once.
func (tc *tcase) waitPower(want bmc.PowerState) {
	tc.Helper()
	var seen []string
	note := func(s string) {
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
	}
	tc.poll(fmt.Sprintf("power state %s", want), func() (bool, string) {
		st, err := tc.readPower()
		if err != nil {
			if !bmc.IsTransient(err) {
				tc.Fatalf("PowerState while waiting for %s: permanent error: %v (states seen: %s)", want, err, strings.Join(seen, " -> "))
			}
			note("error: " + err.Error())
			return false, strings.Join(seen, " -> ")
		}
		note(string(st))
		return st == want, strings.Join(seen, " -> ")
	})
}

// poll calls check until it reports done, with PollInterval between calls,
// calling the target's Advance between polls; it fails the subtest after
// SettleTimeout with check's last description.
func (tc *tcase) poll(what string, check func() (done bool, last string)) {
	tc.Helper()
	deadline := time.Now().Add(tc.opts.SettleTimeout)
	ticker := time.NewTicker(tc.opts.PollInterval)
	defer ticker.Stop()
	for {
		done, last := check()
		if done {
			return
		}
		if time.Now().After(deadline) {
			tc.Fatalf("waited %v for %s; not reached (seen: %s). Raise Options.SettleTimeout if the peer is slow", tc.opts.SettleTimeout, what, last)
		}
		if tc.advance != nil {
			tc.advance()
		}
		select {
		case <-ticker.C:
		case <-tc.ctx().Done():
			tc.Fatalf("waiting for %s: %v", what, tc.ctx().Err())
		}
	}
}

// ensurePower brings the server to want (On or Off) with the driver itself.
// A transition still in progress (left by an earlier subtest on a shared
// peer) is waited out first, since some BMCs drop requests meanwhile.
func (tc *tcase) ensurePower(want bmc.PowerState) {
	tc.Helper()
	var st bmc.PowerState
	tc.poll("a stable power state before the subtest", func() (bool, string) {
		var err error
		st, err = tc.readPower()
		if err != nil {
			if !bmc.IsTransient(err) {
				tc.Fatalf("PowerState before the subtest: %v", err)
			}
			return false, err.Error()
		}
		return !st.Transitional(), string(st)
	})
	if st == want {
		return
	}
	action := bmc.PowerActionOn
	if want == bmc.PowerOff {
		action = bmc.PowerActionOff
	}
	tc.noErr(fmt.Sprintf("preparing the server: SetPower(%s)", action), tc.drv.SetPower(tc.ctx(), action))
	tc.waitPower(want)
}
