package bmctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// method is one driver method the Context/... subtests call.
type method struct {
	name string
	// needs is the capability the method needs, "" for none: with the peer
	// lacking it, bmc.ErrNotSupported is an accepted answer too.
	needs Capability
	// call returns ok=false when the driver does not implement the method.
	call func(ctx context.Context, d bmc.Driver) (ok bool, err error)
}

func methods(opts Options) []method {
	return []method{
		{"FirmwareVersion", bmc.CapabilityFirmwareUpdate, func(ctx context.Context, d bmc.Driver) (bool, error) {
			f, ok := d.(bmc.FirmwareUpdater)
			if !ok {
				return false, nil
			}
			_, err := f.FirmwareVersion(ctx, "BIOS")
			return true, err
		}},
		{"PowerState", "", func(ctx context.Context, d bmc.Driver) (bool, error) {
			_, err := d.PowerState(ctx)
			return true, err
		}},
		{"SetPower", "", func(ctx context.Context, d bmc.Driver) (bool, error) {
			return true, d.SetPower(ctx, bmc.PowerActionOn)
		}},
		{"SetBootOverride", bmc.CapabilityBootOverride, func(ctx context.Context, d bmc.Driver) (bool, error) {
			s, ok := d.(bmc.BootOverrideSetter)
			if !ok {
				return false, nil
			}
			return true, s.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE})
		}},
		{"BootOverride", bmc.CapabilityBootOverrideReadBack, func(ctx context.Context, d bmc.Driver) (bool, error) {
			g, ok := d.(bmc.BootOverrideGetter)
			if !ok {
				return false, nil
			}
			_, err := g.BootOverride(ctx)
			return true, err
		}},
		{"InsertMedia", bmc.CapabilityVirtualMediaCD, func(ctx context.Context, d bmc.Driver) (bool, error) {
			vm, ok := d.(bmc.VirtualMedia)
			if !ok {
				return false, nil
			}
			return true, vm.InsertMedia(ctx, bmc.MediaCD, opts.MediaImages[0])
		}},
		{"EjectMedia", bmc.CapabilityVirtualMediaCD, func(ctx context.Context, d bmc.Driver) (bool, error) {
			vm, ok := d.(bmc.VirtualMedia)
			if !ok {
				return false, nil
			}
			return true, vm.EjectMedia(ctx, bmc.MediaCD)
		}},
		{"MediaStatus", bmc.CapabilityVirtualMediaCD, func(ctx context.Context, d bmc.Driver) (bool, error) {
			vm, ok := d.(bmc.VirtualMedia)
			if !ok {
				return false, nil
			}
			_, err := vm.MediaStatus(ctx, bmc.MediaCD)
			return true, err
		}},
		{"ResetBMC", bmc.CapabilityBMCResetWarm, func(ctx context.Context, d bmc.Driver) (bool, error) {
			r, ok := d.(bmc.BMCResetter)
			if !ok {
				return false, nil
			}
			return true, r.ResetBMC(ctx, bmc.BMCResetWarm)
		}},
		{"SecureBoot", bmc.CapabilitySecureBoot, func(ctx context.Context, d bmc.Driver) (bool, error) {
			m, ok := d.(bmc.SecureBootManager)
			if !ok {
				return false, nil
			}
			_, err := m.SecureBoot(ctx)
			return true, err
		}},
		{"SetSecureBoot", bmc.CapabilitySecureBoot, func(ctx context.Context, d bmc.Driver) (bool, error) {
			m, ok := d.(bmc.SecureBootManager)
			if !ok {
				return false, nil
			}
			_, err := m.SetSecureBoot(ctx, false)
			return true, err
		}},
		{"BootOrder", bmc.CapabilityBootOrder, func(ctx context.Context, d bmc.Driver) (bool, error) {
			m, ok := d.(bmc.BootOrderManager)
			if !ok {
				return false, nil
			}
			_, err := m.BootOrder(ctx)
			return true, err
		}},
		{"SetBootOrder", bmc.CapabilityBootOrder, func(ctx context.Context, d bmc.Driver) (bool, error) {
			m, ok := d.(bmc.BootOrderManager)
			if !ok {
				return false, nil
			}
			_, err := m.SetBootOrder(ctx, bmc.BootOrderChange{Order: []string{"Boot0001"}})
			return true, err
		}},
	}
}

func (s *suite) context(t *testing.T, path string) {
	kinds := []struct {
		name string
		make func() (context.Context, context.CancelFunc)
		want error
	}{
		{"Canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"DeadlineExceeded", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Unix(0, 0))
		}, context.DeadlineExceeded},
		// A fence that refuses (a lapsed lease): the driver must ask
		// bmc.Admit before each request and return its error unsent.
		{"Fenced", func() (context.Context, context.CancelFunc) {
			return bmc.WithFence(context.Background(), ClosedFence()), func() {}
		}, bmc.ErrFenced},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			kpath := path + "/" + k.name
			if s.opts.skipped(kpath) {
				t.Skipf("bmctest: %s is listed in Options.Skip", kpath)
			}
			for _, m := range methods(s.opts) {
				s.run(t, kpath, m.name, func(tc *tcase) {
					ctx, cancel := k.make()
					defer cancel()
					type result struct {
						ok  bool
						err error
					}
					done := make(chan result, 1)
					go func() {
						ok, err := m.call(ctx, tc.drv)
						done <- result{ok, err}
					}()
					var r result
					select {
					case r = <-done:
					case <-time.After(tc.opts.CallTimeout):
						tc.Fatalf("%s with a done ctx did not return within Options.CallTimeout (%v): the driver ignores ctx", m.name, tc.opts.CallTimeout)
					}
					if !r.ok {
						tc.Skipf("%T does not implement %s", tc.drv, m.name)
					}
					what := fmt.Sprintf("%s with a ctx that is done (%v)", m.name, k.want)
					if r.err == nil {
						tc.Fatalf("%s succeeded; want an error wrapping %v", what, k.want)
					}
					accepted := []error{k.want}
					if m.needs != "" && tc.opts.lacks(m.needs) || m.needs == bmc.CapabilityBootOverrideReadBack && tc.opts.lacks(bmc.CapabilityBootOverride) {
						accepted = append(accepted, bmc.ErrNotSupported)
					}
					if !errIs(r.err, accepted...) {
						tc.Errorf("%s: error %q does not wrap %v", what, r.err, k.want)
					}
					tc.requireOpError(what, r.err)
				})
			}
		})
	}
}
