package fake_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

// TestSecureBootPendingUntilBoot: enabling is pending until the next boot,
// whichever way the server boots, then applied; with SecureBootImmediate
// it applies at once. Calls are logged under their methods.
func TestSecureBootPendingUntilBoot(t *testing.T) {
	for _, boot := range []bmc.PowerAction{bmc.PowerActionOn, bmc.PowerActionCycle, bmc.PowerActionReset} {
		t.Run(string(boot), func(t *testing.T) {
			ctx := context.Background()
			power := bmc.PowerOn
			if boot == bmc.PowerActionOn {
				power = bmc.PowerOff
			}
			srv, drv := dialTarget(t, fake.Options{Power: power})
			m := drv.(bmc.SecureBootManager)
			s, err := m.SetSecureBoot(ctx, true)
			if err != nil || s.Pending == nil || !*s.Pending || s.Applied(true) {
				t.Fatalf("SetSecureBoot(true) = %v, %v; want pending on", s, err)
			}
			if err := drv.SetPower(ctx, boot); err != nil {
				t.Fatal(err)
			}
			if s := srv.SecureBootState(); !s.Applied(true) || s.CurrentBoot != bmc.SecureBootCurrentEnabled {
				t.Fatalf("after %s: %v; want applied", boot, s)
			}
			if n := len(srv.CallsTo(fake.MethodSetSecureBoot)); n != 1 {
				t.Errorf("%d SetSecureBoot calls logged, want 1", n)
			}
		})
	}
	_, drv := dialTarget(t, fake.Options{SecureBootImmediate: true})
	if s, err := drv.(bmc.SecureBootManager).SetSecureBoot(context.Background(), true); err != nil || !s.Applied(true) {
		t.Fatalf("SecureBootImmediate: SetSecureBoot(true) = %v, %v; want applied at once", s, err)
	}
}

// TestSecureBootSetupMode: DeletePK enters SetupMode, where enabling is
// refused with ErrSecureBootSetupMode and a boot runs without Secure Boot.
func TestSecureBootSetupMode(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialTarget(t, fake.Options{SecureBootImmediate: true})
	m := drv.(bmc.SecureBootManager)
	if _, err := m.SetSecureBoot(ctx, true); err != nil {
		t.Fatal(err)
	}
	s, err := m.ResetSecureBootKeys(ctx, bmc.SecureBootDeletePK)
	if err != nil || s.Mode != bmc.SecureBootSetupMode {
		t.Fatalf("ResetSecureBootKeys(DeletePK) = %v, %v", s, err)
	}
	if err := drv.SetPower(ctx, bmc.PowerActionCycle); err != nil {
		t.Fatal(err)
	}
	if s := srv.SecureBootState(); s.CurrentBoot != bmc.SecureBootCurrentDisabled || s.Pending == nil {
		t.Fatalf("a boot in SetupMode: %v; want the current boot without Secure Boot, the setting pending", s)
	}
	if _, err := m.SetSecureBoot(ctx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetSecureBoot(ctx, true); !errors.Is(err, bmc.ErrSecureBootSetupMode) {
		t.Fatalf("SetSecureBoot(true) in SetupMode: %v; want ErrSecureBootSetupMode", err)
	}
	if _, err := m.ResetSecureBootKeys(ctx, bmc.SecureBootResetDBX); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("ResetSecureBootKeys(ResetDBX): %v; want ErrNotSupported (not offered)", err)
	}
}

// TestBootOrderPendingUntilBoot: a partial order, an option's enablement
// and the HTTP boot URI are pending until the next boot, then current;
// BootOrderImmediate applies at once; an unsupported BMC refuses.
func TestBootOrderPendingUntilBoot(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialTarget(t, fake.Options{})
	m := drv.(bmc.BootOrderManager)
	uri := "http://10.0.0.1/ipxe.efi"
	c := bmc.BootOrderChange{Order: []string{"Boot0002"}, Enabled: map[string]bool{"Boot0004": true}, HTTPBootURI: &uri}
	b, err := m.SetBootOrder(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Boot0002", "Boot0001", "Boot0003", "Boot0004"}; !reflect.DeepEqual(b.PendingOrder, want) || len(c.Differing(b)) != 3 || len(c.Differing(b.Next())) != 0 {
		t.Fatalf("SetBootOrder = %+v; want everything pending, order %v", b, want)
	}
	if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	if b := srv.BootOrderState(); len(c.Differing(b)) != 0 || b.RebootRequired() {
		t.Fatalf("after the boot: %+v", b)
	}
	_, drv = dialTarget(t, fake.Options{BootOrderImmediate: true, Unsupported: []bmc.Capability{bmc.CapabilityBootHTTP}})
	b, err = drv.(bmc.BootOrderManager).SetBootOrder(ctx, bmc.BootOrderChange{Order: []string{"Boot0003"}})
	if err != nil || b.RebootRequired() || b.Order[0] != "Boot0003" || b.HTTPBootURI != nil {
		t.Fatalf("BootOrderImmediate without HTTP boot: %+v, %v; want applied, no HTTP boot URI", b, err)
	}
	if _, err := drv.(bmc.BootOrderManager).SetBootOrder(ctx, bmc.BootOrderChange{HTTPBootURI: &uri}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("HTTP boot URI without HTTP boot: %v; want ErrNotSupported", err)
	}
	_, drv = dialTarget(t, fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityBootOrder, bmc.CapabilitySecureBoot}})
	if _, err := drv.(bmc.BootOrderManager).BootOrder(ctx); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("BootOrder on a BMC without it: %v", err)
	}
	if _, err := drv.(bmc.SecureBootManager).SecureBoot(ctx); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("SecureBoot on a BMC without it: %v", err)
	}
}
