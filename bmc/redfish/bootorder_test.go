package redfish_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

func strp(s string) *string { return &s }

// TestBootOrderImmediate: the order, the options and the HTTP boot URI read
// as the simulator serves them; a partial order is sent whole (the others
// after, in their order) and applies at once; an option is enabled; HTTP
// boot set; a second identical change sends nothing.
func TestBootOrderImmediate(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
	b, err := drv.BootOrder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Boot0001", "Boot0002", "Boot0003", "Boot0004"}; !reflect.DeepEqual(b.Order, want) || len(b.Options) != 4 || b.RebootRequired() {
		t.Fatalf("BootOrder = %+v; want order %v, 4 options, nothing pending", b, want)
	}
	mac := strings.ToLower(redfishtest.SystemMAC(1, 1))
	if got := b.NetworkOptions(mac, "Pxe"); !reflect.DeepEqual(got, []string{"Boot0001"}) {
		t.Errorf("NetworkOptions(%s, Pxe) = %v; want Boot0001 (its device path names NIC1's MAC)", mac, got)
	}
	if b.HTTPBootURI == nil {
		t.Fatal("HTTPBootURI nil; the simulator's Boot has HttpBootUri")
	}
	c := bmc.BootOrderChange{Order: []string{"Boot0003"}, Enabled: map[string]bool{"Boot0004": true}, HTTPBootURI: strp("http://10.0.0.1/ipxe.efi")}
	srv.ClearRequests()
	got, err := drv.SetBootOrder(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Differing(got); len(d) != 0 || got.RebootRequired() {
		t.Fatalf("after SetBootOrder: %+v differs in %v (pending %t); want applied at once", got, d, got.RebootRequired())
	}
	if want := []string{"Boot0003", "Boot0001", "Boot0002", "Boot0004"}; !reflect.DeepEqual(got.Order, want) {
		t.Errorf("order %v, want %v (the named first, the rest in their order)", got.Order, want)
	}
	reqs := changing(srv)
	if len(reqs) != 2 {
		t.Fatalf("requests %+v; want a PATCH of the option and one of the system", reqs)
	}
	if !strings.HasSuffix(reqs[0].Path, "/BootOptions/Boot0004") || reqs[0].Body != `{"BootOptionEnabled":true}` {
		t.Errorf("first PATCH %s %s", reqs[0].Path, reqs[0].Body)
	}
	if !strings.HasSuffix(reqs[1].Path, "/Systems/1") || !strings.Contains(reqs[1].Body, `"BootOrder":["Boot0003","Boot0001","Boot0002","Boot0004"]`) ||
		!strings.Contains(reqs[1].Body, `"HttpBootUri":"http://10.0.0.1/ipxe.efi"`) || strings.Contains(reqs[1].Body, "ApplyTime") {
		t.Errorf("system PATCH %s %s", reqs[1].Path, reqs[1].Body)
	}
	if order, held := srv.BootOrder("1"); !reflect.DeepEqual(order, got.Order) || held != nil {
		t.Errorf("simulator holds %v (held %v)", order, held)
	}
	srv.ClearRequests()
	if _, err := drv.SetBootOrder(ctx, c); err != nil {
		t.Fatal(err)
	}
	if reqs := changing(srv); len(reqs) != 0 {
		t.Errorf("the same change again sent %+v; want nothing", reqs)
	}
}

// TestBootOrderOnReset: on a BMC with a system settings object (Dell's
// shape) the order and the HTTP boot URI go there with ApplyTime OnReset,
// read as pending, are not sent again, and read back current after the
// boot.
func TestBootOrderOnReset(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialSim(t, redfishtest.Config{BootOrder: redfishtest.BootOrderOnReset}, testOptions(), "", false)
	c := bmc.BootOrderChange{Order: []string{"Boot0002", "Boot0001"}, HTTPBootURI: strp("https://boot.example.com/x.efi")}
	srv.ClearRequests()
	got, err := drv.SetBootOrder(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	reqs := changing(srv)
	if len(reqs) != 1 || !strings.HasSuffix(reqs[0].Path, "/Systems/1/Settings") || !strings.Contains(reqs[0].Body, `"ApplyTime":"OnReset"`) {
		t.Fatalf("requests %+v; want one PATCH of the settings object with ApplyTime OnReset", reqs)
	}
	if !got.RebootRequired() || len(c.Differing(got)) != 2 || len(c.Differing(got.Next())) != 0 {
		t.Fatalf("after SetBootOrder: %+v; want order and URI pending, the next boot bringing them", got)
	}
	if want := []string{"Boot0002", "Boot0001", "Boot0003", "Boot0004"}; !reflect.DeepEqual(got.PendingOrder, want) {
		t.Errorf("pending order %v, want %v", got.PendingOrder, want)
	}
	srv.ClearRequests()
	if _, err := drv.SetBootOrder(ctx, c); err != nil {
		t.Fatal(err)
	}
	if reqs := changing(srv); len(reqs) != 0 {
		t.Errorf("the pending change again sent %+v; want nothing", reqs)
	}
	boot(t, drv)
	after, err := drv.BootOrder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Differing(after); len(d) != 0 || after.RebootRequired() {
		t.Fatalf("after the boot: %+v differs in %v; want applied, nothing pending", after, d)
	}
}

// TestBootOrderRefusedSendsNothing: an unknown reference, a repeated one,
// an invalid URI are refused naming them with nothing sent; a system
// without BootOrder or BootOptions is NotSupported with nothing sent.
func TestBootOrderRefusedSendsNothing(t *testing.T) {
	ctx := context.Background()
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
	for _, c := range []struct {
		change bmc.BootOrderChange
		want   string
	}{
		{bmc.BootOrderChange{Order: []string{"Boot0009"}}, `"Boot0009" is not a boot option`},
		{bmc.BootOrderChange{Order: []string{"Boot0001", "Boot0001"}}, "given twice"},
		{bmc.BootOrderChange{Enabled: map[string]bool{"Boot0009": true}}, `enabled["Boot0009"]`},
		{bmc.BootOrderChange{HTTPBootURI: strp("ftp://h/x")}, "not an absolute http or https URL"},
	} {
		srv.ClearRequests()
		_, err := drv.SetBootOrder(ctx, c.change)
		if !errors.Is(err, bmc.ErrInvalidBootOrder) || !strings.Contains(err.Error(), c.want) || bmc.IsTransient(err) {
			t.Errorf("SetBootOrder(%+v): %v; want a permanent ErrInvalidBootOrder with %q", c.change, err, c.want)
		}
		if reqs := changing(srv); len(reqs) != 0 {
			t.Errorf("SetBootOrder(%+v) sent %+v", c.change, reqs)
		}
	}
	srv, drv = dialSim(t, redfishtest.Config{BootOrder: redfishtest.BootOrderNone, NoHTTPBootURI: true}, testOptions(), "", false)
	srv.ClearRequests()
	_, err1 := drv.BootOrder(ctx)
	_, err2 := drv.SetBootOrder(ctx, bmc.BootOrderChange{Order: []string{"Boot0001"}})
	for i, err := range []error{err1, err2} {
		if !errors.Is(err, bmc.ErrNotSupported) {
			t.Errorf("call %d on a system without a boot order: %v; want ErrNotSupported", i, err)
		}
	}
	if reqs := changing(srv); len(reqs) != 0 {
		t.Errorf("sent %+v; want nothing that changes state", reqs)
	}
}

// TestBootOrderRequests pins the request counts of docs/secure-boot-boot-order.md:
// system, collection, 4 options.
func TestBootOrderRequests(t *testing.T) {
	ctx := context.Background()
	_, drv := dialSim(t, redfishtest.Config{}, testOptions(), "", false)
	for _, step := range []struct {
		what string
		want int64
		f    func() error
	}{
		{"BootOrder", 6, func() error { _, err := drv.BootOrder(ctx); return err }},
		{"SetBootOrder", 13, func() error {
			_, err := drv.SetBootOrder(ctx, bmc.BootOrderChange{Order: []string{"Boot0002"}})
			return err
		}},
		{"SetBootOrder again", 6, func() error {
			_, err := drv.SetBootOrder(ctx, bmc.BootOrderChange{Order: []string{"Boot0002"}})
			return err
		}},
	} {
		before := drv.Stats().Requests
		if err := step.f(); err != nil {
			t.Fatal(err)
		}
		if got := drv.Stats().Requests - before; got != step.want {
			t.Errorf("%s took %d requests, want %d", step.what, got, step.want)
		}
	}
}
