package bmctest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// bootOrder checks bmc.BootOrderManager: the state's shape, refusal of an
// unknown option with nothing changed, idempotence, an order change that
// is pending until the next boot (or applied at once) and reads back after
// it, enabling a boot option, and the HTTP boot URI. Changes are undone at
// the end the same way.
func (s *suite) bootOrder(t *testing.T, path string) {
	s.run(t, path, "Read", func(tc *tcase) {
		m := tc.bootOrderManager()
		b := tc.readBootOrder(m)
		seen := map[string]bool{}
		for _, o := range b.Options {
			if o.Reference == "" || seen[o.Reference] {
				tc.Errorf("boot option %+v: empty or repeated reference", o)
			}
			seen[o.Reference] = true
			if o.PendingEnabled != nil && *o.PendingEnabled == o.Enabled {
				tc.Errorf("boot option %s: PendingEnabled equals Enabled; it lists only a value that differs", o.Reference)
			}
		}
		if b.PendingOrder != nil && slices.Equal(b.PendingOrder, b.Order) {
			tc.Errorf("PendingOrder %v equals Order; it lists only an order that differs", b.PendingOrder)
		}
		if len(b.Options) > 0 {
			for _, ref := range b.Order {
				if !seen[ref] {
					tc.Errorf("Order names %s, which is not among the options", ref)
				}
			}
		}
	})
	s.run(t, path, "UnknownOptionRefused", func(tc *tcase) {
		m := tc.bootOrderManager()
		before := tc.readBootOrder(m)
		c := bmc.BootOrderChange{Order: []string{"BmctestNoSuchOption"}}
		_, err := m.SetBootOrder(tc.ctx(), c)
		if err == nil {
			tc.Fatalf("SetBootOrder(%+v) succeeded; want it refused", c)
		}
		tc.requireOpError("SetBootOrder(unknown option)", err)
		if !errors.Is(err, bmc.ErrInvalidBootOrder) || bmc.IsTransient(err) {
			tc.Errorf("SetBootOrder(unknown option): %v; want a permanent error wrapping bmc.ErrInvalidBootOrder", err)
		}
		if after := tc.readBootOrder(m); !reflect.DeepEqual(after, before) {
			tc.Errorf("a refused SetBootOrder changed the state from %+v to %+v", before, after)
		}
	})
	s.run(t, path, "SetCurrentIsNoop", func(tc *tcase) {
		m := tc.bootOrderManager()
		before := tc.readBootOrder(m)
		if len(before.Next().Order) == 0 {
			tc.Skipf("the peer reports an empty boot order")
		}
		c := bmc.BootOrderChange{Order: before.Next().Order[:1]}
		_, err := m.SetBootOrder(tc.ctx(), c)
		tc.noErr(fmt.Sprintf("SetBootOrder(%v) (already first)", c.Order), err)
		if after := tc.readBootOrder(m); !reflect.DeepEqual(after, before) {
			tc.Errorf("SetBootOrder of the order already there changed the state from %+v to %+v", before, after)
		}
	})
	s.run(t, path, "ApplyAfterBoot", func(tc *tcase) {
		m := tc.bootOrderManager()
		before := tc.readBootOrder(m)
		if before.RebootRequired() {
			tc.Skipf("the peer already has a boot order change pending")
		}
		if len(before.Order) < 2 {
			tc.Skipf("the peer's boot order has fewer than two entries")
		}
		last := before.Order[len(before.Order)-1]
		tc.applyBootOrder(m, bmc.BootOrderChange{Order: []string{last}})
		tc.applyBootOrder(m, bmc.BootOrderChange{Order: before.Order})
	})
	s.run(t, path, "EnableOption", func(tc *tcase) {
		m := tc.bootOrderManager()
		before := tc.readBootOrder(m)
		if len(before.Options) == 0 || before.RebootRequired() {
			tc.Skipf("the peer lists no boot options, or has a change pending")
		}
		o := before.Options[len(before.Options)-1]
		tc.applyBootOrder(m, bmc.BootOrderChange{Enabled: map[string]bool{o.Reference: !o.Enabled}})
		tc.applyBootOrder(m, bmc.BootOrderChange{Enabled: map[string]bool{o.Reference: o.Enabled}})
	})
	s.run(t, path, "HTTPBootURI", func(tc *tcase) {
		m := tc.bootOrderManager()
		before := tc.readBootOrder(m)
		c := bmc.BootOrderChange{HTTPBootURI: &tc.opts.HTTPBootURIs[0]}
		if before.HTTPBootURI == nil {
			_, err := m.SetBootOrder(tc.ctx(), c)
			tc.requireNotSupported("SetBootOrder(httpBootURI) on a peer without an HTTP boot URI", err)
			return
		}
		if before.RebootRequired() {
			tc.Skipf("the peer already has a change pending")
		}
		tc.applyBootOrder(m, c)
		tc.applyBootOrder(m, bmc.BootOrderChange{HTTPBootURI: &tc.opts.HTTPBootURIs[1]})
	})
}

func (tc *tcase) bootOrderManager() bmc.BootOrderManager {
	tc.Helper()
	m, ok := tc.drv.(bmc.BootOrderManager)
	if !ok {
		tc.Skipf("%T does not implement bmc.BootOrderManager", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityBootOrder) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityBootOrder, bmc.CapabilityBootOrder)
	}
	return m
}

func (tc *tcase) readBootOrder(m bmc.BootOrderManager) bmc.BootOrder {
	tc.Helper()
	b, err := m.BootOrder(tc.ctx())
	if err != nil {
		tc.requireOpError("BootOrder", err)
	}
	tc.noErr("BootOrder", err)
	return b
}

// applyBootOrder requests c; when the result is pending it checks that the
// next boot brings c and the current state does not show it yet, boots the
// server (off, then on) and waits for c to read back; else c must read
// back at once. A second SetBootOrder afterwards must leave nothing
// pending.
func (tc *tcase) applyBootOrder(m bmc.BootOrderManager, c bmc.BootOrderChange) {
	tc.Helper()
	got, err := m.SetBootOrder(tc.ctx(), c)
	tc.noErr(fmt.Sprintf("SetBootOrder(%+v)", c), err)
	if d := c.Differing(got.Next()); len(d) > 0 {
		tc.Fatalf("SetBootOrder(%+v) returned %+v: the next boot does not bring %v", c, got, d)
	}
	if got.RebootRequired() {
		tc.ensurePower(bmc.PowerOff)
		tc.noErr("SetPower(on) to boot", tc.drv.SetPower(tc.ctx(), bmc.PowerActionOn))
		tc.waitPower(bmc.PowerOn)
	}
	tc.poll(fmt.Sprintf("boot order change %+v to read back", c), func() (bool, string) {
		b, err := m.BootOrder(tc.ctx())
		if err != nil && !bmc.IsTransient(err) {
			tc.Fatalf("BootOrder after the change: %v", err)
		}
		if err != nil {
			return false, err.Error()
		}
		d := c.Differing(b)
		return len(d) == 0 && !b.RebootRequired(), fmt.Sprintf("differing %v, pending %t", d, b.RebootRequired())
	})
	again, err := m.SetBootOrder(tc.ctx(), c)
	tc.noErr(fmt.Sprintf("SetBootOrder(%+v) again", c), err)
	if again.RebootRequired() {
		tc.Errorf("SetBootOrder(%+v) again, after it applied, left a change pending: %+v", c, again)
	}
}

// checkBootOrderUnsupported checks Unsupported/boot-order.
func (tc *tcase) checkBootOrderUnsupported() {
	tc.Helper()
	m, ok := tc.drv.(bmc.BootOrderManager)
	if !ok {
		tc.Skipf("%T does not implement bmc.BootOrderManager", tc.drv)
	}
	_, err := m.BootOrder(tc.ctx())
	tc.requireNotSupported("BootOrder", err)
	_, err = m.SetBootOrder(tc.ctx(), bmc.BootOrderChange{Order: []string{"Boot0001"}})
	tc.requireNotSupported("SetBootOrder", err)
}
