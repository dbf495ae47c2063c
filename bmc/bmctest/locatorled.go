package bmctest

import (
	"errors"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// locatorLED checks bmc.LocatorLED:
//
//   - OnOff: On, Off, On, Off, each read back (where the peer reports the
//     LED) and compared with what the peer shows (Target.LocatorLED);
//   - Blinking: Blinking reads back Blinking, which also shows On;
//   - Idempotent: On twice is accepted and reads On;
//   - InvalidState: a state that is none of bmc's is a permanent error.
func (s *suite) locatorLED(t *testing.T, path string) {
	s.run(t, path, "OnOff", func(tc *tcase) {
		l := tc.locator()
		for _, want := range []bmc.LEDState{bmc.LEDOn, bmc.LEDOff, bmc.LEDOn, bmc.LEDOff} {
			tc.setLED(l, want)
		}
	})
	s.run(t, path, "Blinking", func(tc *tcase) {
		l := tc.locator()
		if tc.opts.lacks(bmc.CapabilityLocatorLEDBlink) {
			tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityLocatorLEDBlink, bmc.CapabilityLocatorLEDBlink)
		}
		tc.setLED(l, bmc.LEDBlinking)
		tc.setLED(l, bmc.LEDOff)
	})
	s.run(t, path, "Idempotent", func(tc *tcase) {
		l := tc.locator()
		tc.setLED(l, bmc.LEDOn)
		tc.setLED(l, bmc.LEDOn)
		tc.setLED(l, bmc.LEDOff)
		tc.setLED(l, bmc.LEDOff)
	})
	s.run(t, path, "InvalidState", func(tc *tcase) {
		l := tc.locator()
		err := l.SetLocatorLED(tc.ctx(), "Purple")
		if err == nil {
			tc.Fatalf("SetLocatorLED(%q) succeeded; want a permanent error", "Purple")
		}
		tc.requireOpError("SetLocatorLED(Purple)", err)
		if bmc.IsTransient(err) {
			tc.Errorf("SetLocatorLED(Purple): error %q is transient; want permanent", err)
		}
	})
}

func (tc *tcase) locator() bmc.LocatorLED {
	tc.Helper()
	l, ok := tc.drv.(bmc.LocatorLED)
	if !ok {
		tc.Skipf("%T does not implement bmc.LocatorLED", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityLocatorLED) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityLocatorLED, bmc.CapabilityLocatorLED)
	}
	return l
}

// setLED sets want and checks it: read back where the peer reports the
// LED (bmc.LEDState.Satisfies), and at the peer where Target.LocatorLED
// says what it shows.
func (tc *tcase) setLED(l bmc.LocatorLED, want bmc.LEDState) {
	tc.Helper()
	tc.noErr("SetLocatorLED("+string(want)+")", l.SetLocatorLED(tc.ctx(), want))
	if !tc.opts.lacks(bmc.CapabilityLocatorLEDReadBack) {
		got, err := l.LocatorLED(tc.ctx())
		tc.noErr("LocatorLED after SetLocatorLED("+string(want)+")", err)
		if !got.Satisfies(want) {
			tc.Errorf("after SetLocatorLED(%s), LocatorLED reads %q", want, got)
		}
	}
	if peer := tc.target.LocatorLED; peer != nil {
		if got := peer(); !got.Satisfies(want) {
			tc.Errorf("after SetLocatorLED(%s), the peer shows %q (Target.LocatorLED)", want, got)
		}
	}
}

func (tc *tcase) checkLocatorUnsupported(c Capability) {
	tc.Helper()
	l, ok := tc.drv.(bmc.LocatorLED)
	if !ok {
		tc.Skipf("%T does not implement bmc.LocatorLED", tc.drv)
	}
	ctx := tc.ctx()
	switch c {
	case bmc.CapabilityLocatorLED:
		tc.requireNotSupported("SetLocatorLED(On)", l.SetLocatorLED(ctx, bmc.LEDOn))
		_, err := l.LocatorLED(ctx)
		tc.requireNotSupported("LocatorLED", err)
	case bmc.CapabilityLocatorLEDBlink:
		tc.requireNotSupported("SetLocatorLED(Blinking)", l.SetLocatorLED(ctx, bmc.LEDBlinking))
	case bmc.CapabilityLocatorLEDReadBack:
		_, err := l.LocatorLED(ctx)
		tc.requireNotSupported("LocatorLED", err)
		if !tc.opts.lacks(bmc.CapabilityLocatorLED) {
			tc.noErr("SetLocatorLED(On) on a peer that only cannot report the LED", l.SetLocatorLED(ctx, bmc.LEDOn))
		}
	}
}

// checkNMIUnsupported: SendNMI on a server that is on is refused.
func (tc *tcase) checkNMIUnsupported() {
	tc.Helper()
	n, ok := tc.drv.(bmc.NMISender)
	if !ok {
		tc.Skipf("%T does not implement bmc.NMISender", tc.drv)
	}
	tc.ensurePower(bmc.PowerOn)
	tc.requireNotSupported("SendNMI on a server that is on", n.SendNMI(tc.ctx()))
}

// nmi checks bmc.NMISender:
//
//   - Send: on a server that is on, the NMI is accepted, counted by the
//     peer (Target.NMIs) and the server stays on;
//   - ServerOff: on a server that is off, a permanent error that is not
//     ErrNotSupported, and nothing reaches the peer.
func (s *suite) nmi(t *testing.T, path string) {
	s.run(t, path, "Send", func(tc *tcase) {
		n := tc.nmiSender()
		tc.ensurePower(bmc.PowerOn)
		before := tc.peerNMIs()
		tc.noErr("SendNMI", n.SendNMI(tc.ctx()))
		if tc.target.NMIs != nil {
			if got := tc.peerNMIs(); got != before+1 {
				tc.Errorf("after one SendNMI the peer counts %d NMIs, had %d (Target.NMIs)", got, before)
			}
		}
		if st, err := tc.readPower(); err == nil && st != bmc.PowerOn {
			tc.Errorf("after SendNMI the server reads %s; an NMI does not change the power", st)
		}
	})
	s.run(t, path, "ServerOff", func(tc *tcase) {
		n := tc.nmiSender()
		tc.ensurePower(bmc.PowerOff)
		before := tc.peerNMIs()
		err := n.SendNMI(tc.ctx())
		switch {
		case err == nil:
			tc.Fatalf("SendNMI on a server that is off succeeded; want a permanent error saying the server is off")
		case errors.Is(err, bmc.ErrNotSupported):
			tc.Errorf("SendNMI on a server that is off: %v; the peer offers NMIs, want an error saying the server is off, not ErrNotSupported", err)
		case bmc.IsTransient(err):
			tc.Errorf("SendNMI on a server that is off: %v is transient; want permanent", err)
		}
		tc.requireOpError("SendNMI on a server that is off", err)
		if got := tc.peerNMIs(); got != before {
			tc.Errorf("SendNMI on a server that is off reached the peer: %d NMIs, had %d", got, before)
		}
	})
}

func (tc *tcase) nmiSender() bmc.NMISender {
	tc.Helper()
	n, ok := tc.drv.(bmc.NMISender)
	if !ok {
		tc.Skipf("%T does not implement bmc.NMISender", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityNMI) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityNMI, bmc.CapabilityNMI)
	}
	return n
}

func (tc *tcase) peerNMIs() int {
	if tc.target.NMIs == nil {
		return 0
	}
	return tc.target.NMIs()
}
