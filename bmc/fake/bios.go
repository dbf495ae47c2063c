package fake

import (
	"context"
	"fmt"
	"maps"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.BIOSConfigurer = (*Driver)(nil)

// biosState is a fake BMC's BIOS: current values, those pending for the
// next boot, and the registry. Guarded by BMC.mu.
type biosState struct {
	registry  bmc.BIOSRegistry
	current   bmc.BIOSAttributes
	pending   bmc.BIOSAttributes
	immediate bool
}

func i64(v int64) *int64 { return &v }

// DefaultBIOSRegistry is the attribute registry of a fake BMC when
// Options.BIOSRegistry is not set: one attribute of each type, one of them
// read-only, and a password.
func DefaultBIOSRegistry() bmc.BIOSRegistry {
	return bmc.BIOSRegistry{ID: "FakeBiosAttributeRegistry.v1_0_0", Attributes: []bmc.BIOSAttributeDef{
		{Name: "BootMode", Type: bmc.BIOSEnumeration, Values: []string{"Uefi", "Bios"}, ResetRequired: true},
		{Name: "ProcVirtualization", Type: bmc.BIOSEnumeration, Values: []string{"Enabled", "Disabled"}, ResetRequired: true},
		{Name: "SriovEnable", Type: bmc.BIOSBoolean, ResetRequired: true},
		{Name: "PxeRetryCount", Type: bmc.BIOSInteger, LowerBound: i64(0), UpperBound: i64(10), ResetRequired: true},
		{Name: "AssetTag", Type: bmc.BIOSString, MaxLength: i64(32), ResetRequired: true},
		{Name: "SystemModelName", Type: bmc.BIOSString, ReadOnly: true},
		{Name: "AdminPassword", Type: bmc.BIOSPassword},
	}}
}

// DefaultBIOSAttributes are the current values of the default registry's
// attributes (the password left out, as BMCs report it as null).
func DefaultBIOSAttributes() bmc.BIOSAttributes {
	return bmc.BIOSAttributes{
		"BootMode": "Uefi", "ProcVirtualization": "Enabled", "SriovEnable": "false",
		"PxeRetryCount": "3", "AssetTag": "", "SystemModelName": "fake",
	}
}

func newBIOS(o Options) biosState {
	s := biosState{registry: o.BIOSRegistry, current: maps.Clone(o.BIOSAttributes), pending: bmc.BIOSAttributes{}, immediate: o.BIOSImmediate}
	if len(s.registry.Attributes) == 0 {
		s.registry = DefaultBIOSRegistry()
		if s.current == nil {
			s.current = DefaultBIOSAttributes()
		}
	}
	if s.current == nil {
		s.current = bmc.BIOSAttributes{}
	}
	return s
}

// applyPending applies the pending attributes: the system booted. Called
// with b.mu held.
func (s *biosState) applyPending() {
	if len(s.pending) == 0 {
		return
	}
	maps.Copy(s.current, s.pending)
	clear(s.pending)
}

// BIOS returns the BMC's current and pending BIOS attributes (a test
// hook; logs no call).
func (b *BMC) BIOS() bmc.BIOSSettings {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bmc.BIOSSettings{Attributes: maps.Clone(b.bios.current), Pending: maps.Clone(b.bios.pending), AttributeRegistry: b.bios.registry.ID}
}

func (b *BMC) checkBIOS() error {
	if b.lacks[bmc.CapabilityBIOS] {
		return fmt.Errorf("BIOS settings: %w", bmc.ErrNotSupported)
	}
	return nil
}

// BIOSSettings implements [bmc.BIOSConfigurer].
func (d *Driver) BIOSSettings(ctx context.Context) (bmc.BIOSSettings, error) {
	var s bmc.BIOSSettings
	err := d.do(ctx, MethodBIOSSettings, nil, func() error {
		b := d.bmc
		if err := b.checkBIOS(); err != nil {
			return err
		}
		b.settle()
		s = bmc.BIOSSettings{Attributes: maps.Clone(b.bios.current), AttributeRegistry: b.bios.registry.ID}
		if len(b.bios.pending) > 0 {
			s.Pending = maps.Clone(b.bios.pending)
		}
		return nil
	})
	return s, err
}

// BIOSRegistry implements [bmc.BIOSConfigurer].
func (d *Driver) BIOSRegistry(ctx context.Context) (bmc.BIOSRegistry, error) {
	var r bmc.BIOSRegistry
	err := d.do(ctx, MethodBIOSRegistry, nil, func() error {
		if err := d.bmc.checkBIOS(); err != nil {
			return err
		}
		r = d.bmc.bios.registry // never modified after New
		return nil
	})
	return r, err
}

// SetBIOSAttributes implements [bmc.BIOSConfigurer]: it validates attrs
// against the registry, then holds the ones that change anything as
// pending until the next boot (a power on from off, a cycle or a reset),
// or applies them at once with Options.BIOSImmediate.
func (d *Driver) SetBIOSAttributes(ctx context.Context, attrs bmc.BIOSAttributes) (bmc.BIOSApply, error) {
	var res bmc.BIOSApply
	err := d.do(ctx, MethodSetBIOSAttributes, []any{maps.Clone(attrs)}, func() error {
		b := d.bmc
		if err := b.checkBIOS(); err != nil {
			return err
		}
		if err := bmc.ValidateBIOSAttributes(b.bios.registry, attrs); err != nil {
			return err
		}
		b.settle()
		s := &b.bios
		for k, v := range attrs {
			if s.immediate {
				s.current[k] = v
				delete(s.pending, k)
				continue
			}
			if s.current[k] == v {
				delete(s.pending, k) // back to the current value: nothing pending
			} else {
				s.pending[k] = v
			}
		}
		for k := range attrs {
			if _, ok := s.pending[k]; ok {
				res.RebootRequired = true
			}
		}
		if len(s.pending) > 0 {
			res.Pending = maps.Clone(s.pending)
		}
		return nil
	})
	return res, err
}
