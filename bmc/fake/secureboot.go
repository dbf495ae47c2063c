package fake

import (
	"context"
	"fmt"
	"slices"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.SecureBootManager = (*Driver)(nil)

// Methods of bmc.SecureBootManager.
const (
	MethodSecureBoot          Method = "SecureBoot"
	MethodSetSecureBoot       Method = "SetSecureBoot"
	MethodResetSecureBootKeys Method = "ResetSecureBootKeys"
)

// secureBootState is a fake BMC's Secure Boot, in the DMTF model: the
// setting changes at once and the current boot follows at the next boot
// (Options.SecureBootImmediate: at once). Guarded by BMC.mu.
type secureBootState struct {
	enable, current bool
	mode            bmc.SecureBootMode
	immediate       bool
}

func newSecureBoot(o Options) secureBootState {
	return secureBootState{mode: bmc.SecureBootUserMode, immediate: o.SecureBootImmediate}
}

// booted: the boot runs with the setting, unless no platform key is
// enrolled. Called with b.mu held.
func (s *secureBootState) booted() { s.current = s.enable && s.mode != bmc.SecureBootSetupMode }

// state is the state as a driver reads it; resets says whether the BMC
// offers key resets (it lacks CapabilitySecureBootResetKeys otherwise).
func (s *secureBootState) state(resets bool) bmc.SecureBootState {
	cur := bmc.SecureBootCurrentDisabled
	if s.current {
		cur = bmc.SecureBootCurrentEnabled
	}
	out := bmc.SecureBootState{Enabled: s.enable, CurrentBoot: cur, Mode: s.mode, Pending: bmc.PendingSecureBoot(s.enable, nil, cur)}
	if resets {
		out.ResetKeys = []bmc.SecureBootResetKeys{bmc.SecureBootResetAllKeysToDefault, bmc.SecureBootDeleteAllKeys, bmc.SecureBootDeletePK}
	}
	return out
}

// secureBootState is the state as a driver reads it. Called with b.mu held.
func (b *BMC) secureBootState() bmc.SecureBootState {
	return b.secureBoot.state(!b.lacks[bmc.CapabilitySecureBootResetKeys])
}

// SecureBootState returns the BMC's Secure Boot (a test hook; logs no
// call).
func (b *BMC) SecureBootState() bmc.SecureBootState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.secureBootState()
}

func (b *BMC) checkSecureBoot() error {
	if b.lacks[bmc.CapabilitySecureBoot] {
		return fmt.Errorf("secure boot: %w", bmc.ErrNotSupported)
	}
	return nil
}

// SecureBoot implements [bmc.SecureBootManager].
func (d *Driver) SecureBoot(ctx context.Context) (bmc.SecureBootState, error) {
	var s bmc.SecureBootState
	err := d.do(ctx, MethodSecureBoot, nil, func() error {
		if err := d.bmc.checkSecureBoot(); err != nil {
			return err
		}
		d.bmc.settle()
		s = d.bmc.secureBootState()
		return nil
	})
	return s, err
}

// SetSecureBoot implements [bmc.SecureBootManager]: the setting changes at
// once, the current boot at the next boot (Options.SecureBootImmediate: at
// once).
func (d *Driver) SetSecureBoot(ctx context.Context, enabled bool) (bmc.SecureBootState, error) {
	var s bmc.SecureBootState
	err := d.do(ctx, MethodSetSecureBoot, []any{enabled}, func() error {
		b := d.bmc
		if err := b.checkSecureBoot(); err != nil {
			return err
		}
		b.settle()
		sb := &b.secureBoot
		if s = b.secureBootState(); s.NextBoot() == enabled {
			return nil
		}
		if enabled && sb.mode == bmc.SecureBootSetupMode {
			return bmc.Permanent(bmc.ErrSecureBootSetupMode)
		}
		sb.enable = enabled
		if sb.immediate {
			sb.booted()
		}
		s = b.secureBootState()
		return nil
	})
	return s, err
}

// ResetSecureBootKeys implements [bmc.SecureBootManager]: DeleteAllKeys
// and DeletePK enter SetupMode, ResetAllKeysToDefault leaves it; other
// kinds are not offered.
func (d *Driver) ResetSecureBootKeys(ctx context.Context, kind bmc.SecureBootResetKeys) (bmc.SecureBootState, error) {
	var s bmc.SecureBootState
	err := d.do(ctx, MethodResetSecureBootKeys, []any{kind}, func() error {
		b := d.bmc
		if err := b.checkSecureBoot(); err != nil {
			return err
		}
		if b.lacks[bmc.CapabilitySecureBootResetKeys] {
			return fmt.Errorf("secure boot key reset: %w", bmc.ErrNotSupported)
		}
		b.settle()
		sb := &b.secureBoot
		if !kind.Valid() {
			return bmc.Permanent(fmt.Errorf("unknown key reset %q", kind))
		}
		if s = b.secureBootState(); !slices.Contains(s.ResetKeys, kind) {
			return fmt.Errorf("key reset %s is not offered: %w", kind, bmc.ErrNotSupported)
		}
		if kind == bmc.SecureBootResetAllKeysToDefault {
			sb.mode = bmc.SecureBootUserMode
		} else {
			sb.mode = bmc.SecureBootSetupMode
		}
		s = b.secureBootState()
		return nil
	})
	return s, err
}
