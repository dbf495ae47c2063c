package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.BootOrderManager = (*Driver)(nil)

// Methods of bmc.BootOrderManager.
const (
	MethodBootOrder    Method = "BootOrder"
	MethodSetBootOrder Method = "SetBootOrder"
)

// DefaultBootOptions are a fake BMC's boot options when Options.BootOptions
// is not set: PXE and UEFI HTTP on the first NIC (its MAC in the device
// path), a disk, and a disabled CD, in that order.
func DefaultBootOptions() []bmc.BootOption {
	nic := "PciRoot(0x0)/Pci(0x1c,0x0)/Pci(0x0,0x0)/MAC(0CC47A000101,0x1)/IPv4(0.0.0.0)"
	return []bmc.BootOption{
		{Reference: "Boot0001", DisplayName: "UEFI PXEv4", Alias: "Pxe", Enabled: true, UefiDevicePath: nic},
		{Reference: "Boot0002", DisplayName: "UEFI Disk", Alias: "Hdd", Enabled: true, UefiDevicePath: "PciRoot(0x0)/Pci(0x17,0x0)/Sata(0x0,0xFFFF,0x0)"},
		{Reference: "Boot0003", DisplayName: "UEFI HTTPv4", Alias: "UefiHttp", Enabled: true, UefiDevicePath: nic + "/Uri()"},
		{Reference: "Boot0004", DisplayName: "UEFI Virtual CD", Alias: "Cd", Enabled: false},
	}
}

// bootOrderState is a fake BMC's persistent boot order: current values,
// and what the next boot brings (Options.BootOrderImmediate: none, changes
// apply at once). Guarded by BMC.mu.
type bootOrderState struct {
	cur       bmc.BootOrder
	next      *bmc.BootOrder // nil: nothing pending
	immediate bool
}

func newBootOrder(o Options) bootOrderState {
	opts := o.BootOptions
	if opts == nil {
		opts = DefaultBootOptions()
	}
	s := bootOrderState{immediate: o.BootOrderImmediate, cur: bmc.BootOrder{Order: []string{}}}
	for _, opt := range opts {
		opt.PendingEnabled = nil
		s.cur.Options = append(s.cur.Options, opt)
		s.cur.Order = append(s.cur.Order, opt.Reference)
	}
	uri := ""
	s.cur.HTTPBootURI = &uri
	return s
}

// booted applies what is pending. Called with b.mu held.
func (s *bootOrderState) booted() {
	if s.next != nil {
		s.cur, s.next = *s.next, nil
	}
}

// state is the state as a driver reads it: current values and, where the
// next boot brings others, those as pending. httpURI says whether the BMC
// has an HTTP boot URI.
func (s *bootOrderState) state(httpURI bool) bmc.BootOrder {
	out := *s.cur.DeepCopy()
	if n := s.next; n != nil {
		if !slices.Equal(n.Order, s.cur.Order) {
			out.PendingOrder = slices.Clone(n.Order)
		}
		if n.HTTPBootURI != nil && s.cur.HTTPBootURI != nil && *n.HTTPBootURI != *s.cur.HTTPBootURI {
			u := *n.HTTPBootURI
			out.PendingHTTPBootURI = &u
		}
		for i, o := range n.Options {
			if o.Enabled != out.Options[i].Enabled {
				v := o.Enabled
				out.Options[i].PendingEnabled = &v
			}
		}
	}
	if !httpURI {
		out.HTTPBootURI, out.PendingHTTPBootURI = nil, nil
	}
	return out
}

// BootOrderState returns the BMC's boot order as a driver reads it (a test
// hook; logs no call).
func (b *BMC) BootOrderState() bmc.BootOrder {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bootOrder.state(!b.lacks[bmc.CapabilityBootHTTP])
}

// BootOrder implements [bmc.BootOrderManager].
func (d *Driver) BootOrder(ctx context.Context) (bmc.BootOrder, error) {
	var out bmc.BootOrder
	err := d.do(ctx, MethodBootOrder, nil, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityBootOrder] {
			return fmt.Errorf("boot order: %w", bmc.ErrNotSupported)
		}
		b.settle()
		out = b.bootOrder.state(!b.lacks[bmc.CapabilityBootHTTP])
		return nil
	})
	return out, err
}

// SetBootOrder implements [bmc.BootOrderManager]: it validates c, then
// holds what changes anything until the next boot (a power on from off, a
// cycle or a reset), or applies it at once with Options.BootOrderImmediate.
func (d *Driver) SetBootOrder(ctx context.Context, c bmc.BootOrderChange) (bmc.BootOrder, error) {
	var out bmc.BootOrder
	err := d.do(ctx, MethodSetBootOrder, []any{*c.DeepCopy()}, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityBootOrder] {
			return fmt.Errorf("boot order: %w", bmc.ErrNotSupported)
		}
		b.settle()
		s := &b.bootOrder
		httpURI := !b.lacks[bmc.CapabilityBootHTTP]
		st := s.state(httpURI)
		if err := bmc.ValidateBootOrderChange(st, c); err != nil {
			return err
		}
		if len(c.Differing(st.Next())) > 0 {
			// What the next boot brings, in full (st hides the URI of a
			// peer without one).
			next := *s.cur.DeepCopy()
			if s.next != nil {
				next = *s.next.DeepCopy()
			}
			if len(c.Order) > 0 {
				next.Order = bmc.CompleteBootOrder(next.Order, c.Order)
			}
			for _, ref := range slices.Sorted(maps.Keys(c.Enabled)) {
				for i := range next.Options {
					if next.Options[i].Reference == ref {
						next.Options[i].Enabled = c.Enabled[ref]
					}
				}
			}
			if c.HTTPBootURI != nil {
				u := *c.HTTPBootURI
				next.HTTPBootURI = &u
			}
			if s.immediate {
				s.cur, s.next = next, nil
			} else {
				s.next = &next
			}
		}
		out = s.state(httpURI)
		return nil
	})
	return out, err
}
