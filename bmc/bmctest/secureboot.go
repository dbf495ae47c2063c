package bmctest

import (
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// secureBoot checks bmc.SecureBootManager: the state's shape, idempotence,
// a change that is pending until the next boot (or applied at once) and
// reads back applied after it, and that a key reset the peer does not
// offer is NotSupported. The change is undone at the end the same way.
func (s *suite) secureBoot(t *testing.T, path string) {
	s.run(t, path, "Read", func(tc *tcase) {
		m := tc.secureBootManager()
		st := tc.secureBootState(m)
		// A Pending equal to the setting says the current boot ran
		// otherwise (bmc.PendingSecureBoot): it needs a current boot
		// that disagrees.
		if st.Pending != nil && *st.Pending == st.Enabled &&
			(st.CurrentBoot == bmc.SecureBootCurrentUnknown || (st.CurrentBoot == bmc.SecureBootCurrentEnabled) == st.Enabled) {
			tc.Errorf("SecureBoot %v: Pending equals the setting, yet the current boot does not disagree with it", st)
		}
		for _, k := range st.ResetKeys {
			if !k.Valid() {
				tc.Errorf("SecureBoot lists key reset %q, not a bmc.SecureBootResetKeys", k)
			}
		}
	})
	s.run(t, path, "SetCurrentIsNoop", func(tc *tcase) {
		m := tc.secureBootManager()
		before := tc.secureBootState(m)
		got, err := m.SetSecureBoot(tc.ctx(), before.NextBoot())
		tc.noErr(fmt.Sprintf("SetSecureBoot(%t) (what the next boot brings)", before.NextBoot()), err)
		if after := tc.secureBootState(m); after.String() != before.String() || got.String() != before.String() {
			tc.Errorf("SetSecureBoot of the value already set changed the state from %v to %v (returned %v)", before, after, got)
		}
	})
	s.run(t, path, "ApplyAfterBoot", func(tc *tcase) {
		m := tc.secureBootManager()
		before := tc.secureBootState(m)
		if before.Mode == bmc.SecureBootSetupMode {
			tc.Skipf("the peer is in SetupMode (no platform key): Secure Boot cannot take effect")
		}
		if before.Pending != nil {
			tc.Skipf("the peer already has a Secure Boot change pending (%v)", before)
		}
		tc.applySecureBoot(m, !before.Enabled)
		tc.applySecureBoot(m, before.Enabled)
	})
	s.run(t, path, "ResetKeysNotOffered", func(tc *tcase) {
		m := tc.secureBootManager()
		st := tc.secureBootState(m)
		for _, k := range bmc.SecureBootResetKinds() {
			if !st.OffersReset(k) {
				_, err := m.ResetSecureBootKeys(tc.ctx(), k)
				tc.requireNotSupported(fmt.Sprintf("ResetSecureBootKeys(%s), not in ResetKeys %v", k, st.ResetKeys), err)
				if after := tc.secureBootState(m); after.String() != st.String() {
					tc.Errorf("a refused key reset changed the state from %v to %v", st, after)
				}
				return
			}
		}
		tc.Skipf("the peer offers every key reset")
	})
}

func (tc *tcase) secureBootManager() bmc.SecureBootManager {
	tc.Helper()
	m, ok := tc.drv.(bmc.SecureBootManager)
	if !ok {
		tc.Skipf("%T does not implement bmc.SecureBootManager", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilitySecureBoot) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilitySecureBoot, bmc.CapabilitySecureBoot)
	}
	return m
}

func (tc *tcase) secureBootState(m bmc.SecureBootManager) bmc.SecureBootState {
	tc.Helper()
	st, err := m.SecureBoot(tc.ctx())
	if err != nil {
		tc.requireOpError("SecureBoot", err)
	}
	tc.noErr("SecureBoot", err)
	return st
}

// applySecureBoot sets want; when the result is pending it checks the
// setting reads so, boots the server (off, then on) and waits for it to
// read back applied; else it must read back applied at once. A second
// SetSecureBoot afterwards must change nothing.
func (tc *tcase) applySecureBoot(m bmc.SecureBootManager, want bool) {
	tc.Helper()
	got, err := m.SetSecureBoot(tc.ctx(), want)
	tc.noErr(fmt.Sprintf("SetSecureBoot(%t)", want), err)
	if got.NextBoot() != want {
		tc.Fatalf("SetSecureBoot(%t) returned %v: the next boot does not bring it", want, got)
	}
	if got.Pending != nil {
		if st := tc.secureBootState(m); st.NextBoot() != want || st.Pending == nil {
			tc.Fatalf("SetSecureBoot(%t) returned pending, yet SecureBoot reads %v", want, st)
		}
		tc.ensurePower(bmc.PowerOff)
		tc.noErr("SetPower(on) to boot", tc.drv.SetPower(tc.ctx(), bmc.PowerActionOn))
		tc.waitPower(bmc.PowerOn)
	}
	tc.poll(fmt.Sprintf("Secure Boot %t to read back applied", want), func() (bool, string) {
		st, err := m.SecureBoot(tc.ctx())
		if err != nil && !bmc.IsTransient(err) {
			tc.Fatalf("SecureBoot after the change: %v", err)
		}
		if err != nil {
			return false, err.Error()
		}
		return st.Applied(want), st.String()
	})
	again, err := m.SetSecureBoot(tc.ctx(), want)
	tc.noErr(fmt.Sprintf("SetSecureBoot(%t) again", want), err)
	if !again.Applied(want) {
		tc.Errorf("SetSecureBoot(%t) again, after it applied, returned %v", want, again)
	}
}

// checkSecureBootUnsupported checks Unsupported/secure-boot and
// Unsupported/secure-boot-reset-keys.
func (tc *tcase) checkSecureBootUnsupported(c Capability) {
	tc.Helper()
	m, ok := tc.drv.(bmc.SecureBootManager)
	if !ok {
		tc.Skipf("%T does not implement bmc.SecureBootManager", tc.drv)
	}
	ctx := tc.ctx()
	if c == bmc.CapabilitySecureBoot {
		_, err := m.SecureBoot(ctx)
		tc.requireNotSupported("SecureBoot", err)
		_, err = m.SetSecureBoot(ctx, true)
		tc.requireNotSupported("SetSecureBoot(true)", err)
	}
	for _, k := range []bmc.SecureBootResetKeys{bmc.SecureBootResetAllKeysToDefault, bmc.SecureBootDeletePK} {
		_, err := m.ResetSecureBootKeys(ctx, k)
		tc.requireNotSupported(fmt.Sprintf("ResetSecureBootKeys(%s)", k), err)
	}
}
