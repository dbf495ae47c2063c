package bmctest

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// bios checks bmc.BIOSConfigurer: reading, the registry, refusal of
// invalid attributes with nothing changed, idempotence, and a change that
// is pending until the next boot (or applied at once) and reads back after
// it. The change is undone at the end of the subtest the same way.
func (s *suite) bios(t *testing.T, path string) {
	s.run(t, path, "Read", func(tc *tcase) {
		c := tc.biosConfigurer()
		set := tc.biosSettings(c)
		if len(set.Attributes) == 0 {
			tc.Errorf("BIOSSettings reports no attributes")
		}
		for k, v := range set.Pending {
			if set.Attributes[k] == v {
				tc.Errorf("BIOSSettings.Pending[%s]=%q equals the current value; Pending lists only values that differ", k, v)
			}
		}
		reg := tc.biosRegistry(c)
		for name := range set.Attributes {
			if _, ok := reg.Lookup(name); !ok {
				tc.Errorf("attribute %s is not in the registry %s", name, reg.ID)
			}
		}
	})
	s.run(t, path, "UnknownAttributeRefused", func(tc *tcase) {
		c := tc.biosConfigurer()
		tc.refusedBIOS(c, bmc.BIOSAttributes{"BmctestNoSuchAttribute": "1"}, "BmctestNoSuchAttribute")
	})
	s.run(t, path, "InvalidValueRefused", func(tc *tcase) {
		c := tc.biosConfigurer()
		reg := tc.biosRegistry(c)
		def, _, ok := changeable(reg, tc.biosSettings(c).Attributes)
		if !ok {
			tc.Skipf("the registry has no writable Enumeration, Boolean or bounded Integer attribute with a current value")
		}
		bad := "bmctest-not-a-value"
		if def.Type == bmc.BIOSInteger {
			bad = strconv.FormatInt(*def.UpperBound+1, 10)
		}
		tc.refusedBIOS(c, bmc.BIOSAttributes{def.Name: bad}, def.Name)
	})
	s.run(t, path, "ReadOnlyRefused", func(tc *tcase) {
		c := tc.biosConfigurer()
		reg := tc.biosRegistry(c)
		cur := tc.biosSettings(c).Attributes
		for _, a := range reg.Attributes {
			if v, ok := cur[a.Name]; ok && a.ReadOnly {
				tc.refusedBIOS(c, bmc.BIOSAttributes{a.Name: v}, a.Name)
				return
			}
		}
		tc.Skipf("the registry has no read-only attribute with a current value")
	})
	s.run(t, path, "SetCurrentIsNoop", func(tc *tcase) {
		c := tc.biosConfigurer()
		reg := tc.biosRegistry(c)
		before := tc.biosSettings(c)
		def, _, ok := changeable(reg, before.Attributes)
		if !ok {
			tc.Skipf("the registry has no writable attribute the suite can set")
		}
		if _, pending := before.Pending[def.Name]; pending {
			tc.Skipf("attribute %s already has a pending change", def.Name)
		}
		want := bmc.BIOSAttributes{def.Name: before.Attributes[def.Name]}
		res, err := c.SetBIOSAttributes(tc.ctx(), want)
		tc.noErr(fmt.Sprintf("SetBIOSAttributes(%v) (the current value)", want), err)
		if res.RebootRequired {
			tc.Errorf("SetBIOSAttributes of the current value reports RebootRequired; it must change nothing")
		}
		if after := tc.biosSettings(c); !reflect.DeepEqual(after.Pending, before.Pending) {
			tc.Errorf("SetBIOSAttributes of the current value changed Pending from %v to %v", before.Pending, after.Pending)
		}
	})
	s.run(t, path, "ApplyAfterBoot", func(tc *tcase) {
		c := tc.biosConfigurer()
		reg := tc.biosRegistry(c)
		before := tc.biosSettings(c)
		def, other, ok := changeable(reg, before.Attributes)
		if !ok {
			tc.Skipf("the registry has no writable attribute the suite can set")
		}
		orig := before.Attributes[def.Name]
		tc.applyBIOS(c, bmc.BIOSAttributes{def.Name: other})
		// Undo it the same way, so a real BMC is left as found.
		tc.applyBIOS(c, bmc.BIOSAttributes{def.Name: orig})
	})
}

func (tc *tcase) biosConfigurer() bmc.BIOSConfigurer {
	tc.Helper()
	c, ok := tc.drv.(bmc.BIOSConfigurer)
	if !ok {
		tc.Skipf("%T does not implement bmc.BIOSConfigurer", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityBIOS) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityBIOS, bmc.CapabilityBIOS)
	}
	return c
}

func (tc *tcase) biosSettings(c bmc.BIOSConfigurer) bmc.BIOSSettings {
	tc.Helper()
	set, err := c.BIOSSettings(tc.ctx())
	if err != nil {
		tc.requireOpError("BIOSSettings", err)
	}
	tc.noErr("BIOSSettings", err)
	return set
}

func (tc *tcase) biosRegistry(c bmc.BIOSConfigurer) bmc.BIOSRegistry {
	tc.Helper()
	reg, err := c.BIOSRegistry(tc.ctx())
	if err != nil {
		tc.requireOpError("BIOSRegistry", err)
	}
	tc.noErr("BIOSRegistry", err)
	if len(reg.Attributes) == 0 {
		tc.Fatalf("BIOSRegistry %q lists no attributes", reg.ID)
	}
	for _, a := range reg.Attributes {
		if a.Type == bmc.BIOSEnumeration && len(a.Values) == 0 {
			tc.Errorf("registry attribute %s is an Enumeration without values", a.Name)
		}
	}
	return reg
}

// refusedBIOS checks that SetBIOSAttributes(attrs) fails with a permanent
// *bmc.BIOSAttributeError naming name, and that nothing changed.
func (tc *tcase) refusedBIOS(c bmc.BIOSConfigurer, attrs bmc.BIOSAttributes, name string) {
	tc.Helper()
	before := tc.biosSettings(c)
	_, err := c.SetBIOSAttributes(tc.ctx(), attrs)
	if err == nil {
		tc.Fatalf("SetBIOSAttributes(%v) succeeded; want it refused", attrs)
	}
	tc.requireOpError(fmt.Sprintf("SetBIOSAttributes(%v)", attrs), err)
	var ae *bmc.BIOSAttributeError
	if !errors.As(err, &ae) || ae.Attribute != name || !errors.Is(err, bmc.ErrInvalidBIOSAttribute) {
		tc.Errorf("SetBIOSAttributes(%v): error %q is not a *bmc.BIOSAttributeError naming %s", attrs, err, name)
	}
	if !strings.Contains(err.Error(), name) {
		tc.Errorf("SetBIOSAttributes(%v): error %q does not name the attribute", attrs, err)
	}
	if bmc.IsTransient(err) {
		tc.Errorf("SetBIOSAttributes(%v): error %q is transient; want permanent", attrs, err)
	}
	if after := tc.biosSettings(c); !reflect.DeepEqual(after, before) {
		tc.Errorf("a refused SetBIOSAttributes changed the settings from %+v to %+v", before, after)
	}
}

// applyBIOS sets attrs; when the BMC says a reboot is needed it checks
// they are pending and not applied, boots the server (off, then on) and
// waits for them to read back; else they must read back at once. A second
// SetBIOSAttributes afterwards must be a no-op.
func (tc *tcase) applyBIOS(c bmc.BIOSConfigurer, attrs bmc.BIOSAttributes) {
	tc.Helper()
	before := tc.biosSettings(c)
	res, err := c.SetBIOSAttributes(tc.ctx(), attrs)
	tc.noErr(fmt.Sprintf("SetBIOSAttributes(%v)", attrs), err)
	if res.RebootRequired {
		set := tc.biosSettings(c)
		for k, v := range attrs {
			if set.Pending[k] != v {
				tc.Errorf("SetBIOSAttributes(%v) reports RebootRequired, yet BIOSSettings.Pending[%s] = %q", attrs, k, set.Pending[k])
			}
			if res.Pending[k] != v {
				tc.Errorf("SetBIOSAttributes(%v) reports RebootRequired, yet its Pending[%s] = %q", attrs, k, res.Pending[k])
			}
			if set.Attributes[k] != before.Attributes[k] {
				tc.Errorf("attribute %s changed to %q before the boot, yet SetBIOSAttributes reported RebootRequired", k, set.Attributes[k])
			}
		}
		tc.ensurePower(bmc.PowerOff)
		tc.noErr("SetPower(on) to boot", tc.drv.SetPower(tc.ctx(), bmc.PowerActionOn))
		tc.waitPower(bmc.PowerOn)
	}
	tc.poll(fmt.Sprintf("BIOS attributes %v to read back", attrs), func() (bool, string) {
		set, err := c.BIOSSettings(tc.ctx())
		if err != nil && !bmc.IsTransient(err) {
			tc.Fatalf("BIOSSettings after the change: %v", err)
		}
		if err != nil {
			return false, err.Error()
		}
		diff := attrs.Differing(set.Attributes)
		for _, k := range slices.Sorted(maps.Keys(attrs)) {
			if _, p := set.Pending[k]; p && len(diff) == 0 {
				tc.Fatalf("attribute %s reads back applied and is still pending (%+v)", k, set)
			}
		}
		return len(diff) == 0, fmt.Sprintf("differing: %v, pending: %v", diff, set.Pending)
	})
	res, err = c.SetBIOSAttributes(tc.ctx(), attrs)
	tc.noErr(fmt.Sprintf("SetBIOSAttributes(%v) again", attrs), err)
	if res.RebootRequired {
		tc.Errorf("SetBIOSAttributes(%v) again, after they applied, reports RebootRequired", attrs)
	}
}

// changeable picks a writable attribute with a current value and another
// valid value for it: an Enumeration with two values or more, a Boolean, or
// an Integer with bounds; the first by name.
func changeable(reg bmc.BIOSRegistry, cur bmc.BIOSAttributes) (bmc.BIOSAttributeDef, string, bool) {
	defs := slices.Clone(reg.Attributes)
	slices.SortFunc(defs, func(a, b bmc.BIOSAttributeDef) int { return strings.Compare(a.Name, b.Name) })
	for _, want := range []bmc.BIOSAttributeType{bmc.BIOSEnumeration, bmc.BIOSBoolean, bmc.BIOSInteger} {
		for _, a := range defs {
			v, ok := cur[a.Name]
			if !ok || a.ReadOnly || a.Type != want {
				continue
			}
			switch a.Type {
			case bmc.BIOSEnumeration:
				for _, o := range a.Values {
					if o != v {
						return a, o, true
					}
				}
			case bmc.BIOSBoolean:
				if v == "true" {
					return a, "false", true
				}
				return a, "true", true
			case bmc.BIOSInteger:
				n, err := bmc.ParseBIOSInteger(v)
				if err != nil || a.LowerBound == nil || a.UpperBound == nil || *a.LowerBound == *a.UpperBound {
					continue
				}
				if n < *a.UpperBound {
					return a, strconv.FormatInt(n+1, 10), true
				}
				return a, strconv.FormatInt(n-1, 10), true
			}
		}
	}
	return bmc.BIOSAttributeDef{}, "", false
}
