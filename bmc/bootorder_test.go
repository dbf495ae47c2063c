package bmc_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// ilo5Options are boot options as an HPE iLO 5 reports them (device paths
// from a DL360 Gen10 Plus's UefiTargetBootSourceOverride allowable values;
// see docs/secure-boot-boot-order.md).
func ilo5Options() bmc.BootOrder {
	return bmc.BootOrder{
		Order: []string{"Boot0019", "Boot000E", "Boot000F", "Boot0010"},
		Options: []bmc.BootOption{
			{Reference: "Boot0019", DisplayName: "VMware ESXi", Alias: "None", Enabled: true,
				UefiDevicePath: `HD(1,GPT,E0462D22-8BF6-4172-B8A3-B8F56754A170,0x40,0x32000)/\EFI\VMware\safeboot64.efi`},
			{Reference: "Boot000E", Alias: "Pxe", Enabled: true, UefiDevicePath: "PciRoot(0x4)/Pci(0x4,0x0)/Pci(0x0,0x0)/MAC(6805CAE1367C,0x1)/IPv4(0.0.0.0)"},
			{Reference: "Boot000F", Alias: "UefiHttp", Enabled: true, UefiDevicePath: "PciRoot(0x4)/Pci(0x4,0x0)/Pci(0x0,0x0)/MAC(6805CAE1367C,0x1)/IPv4(0.0.0.0)/Uri()"},
			{Reference: "Boot0010", Alias: "Pxe", Enabled: false, UefiDevicePath: "PciRoot(0x4)/Pci(0x4,0x0)/Pci(0x0,0x1)/MAC(6805CAE1367D,0x1)/IPv4(0.0.0.0)"},
		},
		HTTPBootURI: pointer(""),
	}
}

func TestDevicePathMAC(t *testing.T) {
	for in, want := range map[string]string{
		"PciRoot(0x4)/Pci(0x4,0x0)/Pci(0x0,0x0)/MAC(6805CAE1367C,0x1)/IPv4(0.0.0.0)": "68:05:ca:e1:36:7c",
		"MAC(6805cae1367c)": "68:05:ca:e1:36:7c",
		"MAC(6805CAE1367C0000000000000000000000000000000000000000000000000000,0x1)": "68:05:ca:e1:36:7c",
		"HD(1,GPT,E0462D22,0x40,0x32000)":                                           "",
		"MAC(6805CAE136,0x1)":                                                       "",
		"MAC(6805CAE1367G,0x1)":                                                     "",
		"MAC(6805CAE1367C":                                                          "",
		"":                                                                          "",
	} {
		if got := bmc.DevicePathMAC(in); got != want {
			t.Errorf("DevicePathMAC(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNetworkOptions(t *testing.T) {
	b := ilo5Options()
	if got, want := b.NetworkOptions("68-05-CA-E1-36-7C", "pxe"), []string{"Boot000E"}; !reflect.DeepEqual(got, want) {
		t.Errorf("NetworkOptions(NIC1, pxe) = %v, want %v", got, want)
	}
	if got, want := b.NetworkOptions("", "Pxe"), []string{"Boot000E", "Boot0010"}; !reflect.DeepEqual(got, want) {
		t.Errorf("NetworkOptions(any, Pxe) = %v, want %v", got, want)
	}
	if got, want := b.NetworkOptions("6805.cae1.367c", ""), []string{"Boot000E", "Boot000F"}; !reflect.DeepEqual(got, want) {
		t.Errorf("NetworkOptions(NIC1, any) = %v, want %v", got, want)
	}
	if got := b.NetworkOptions("00:11:22:33:44:55", ""); got != nil {
		t.Errorf("NetworkOptions(unknown MAC) = %v, want none", got)
	}
}

func TestCompleteBootOrder(t *testing.T) {
	cur := []string{"Boot0019", "Boot000E", "Boot000F", "Boot0010"}
	if got, want := bmc.CompleteBootOrder(cur, []string{"Boot0010", "Boot000E"}), []string{"Boot0010", "Boot000E", "Boot0019", "Boot000F"}; !reflect.DeepEqual(got, want) {
		t.Errorf("CompleteBootOrder = %v, want %v", got, want)
	}
	if got := bmc.CompleteBootOrder(cur, nil); !reflect.DeepEqual(got, cur) {
		t.Errorf("CompleteBootOrder(nothing first) = %v, want %v", got, cur)
	}
}

func TestBootOrderNextDiffering(t *testing.T) {
	b := ilo5Options()
	b.PendingOrder = []string{"Boot000E", "Boot0019", "Boot000F", "Boot0010"}
	b.Options[3].PendingEnabled = pointer(true)
	b.PendingHTTPBootURI = pointer("http://10.0.0.1/ipxe.efi")
	c := bmc.BootOrderChange{Order: []string{"Boot000E"}, Enabled: map[string]bool{"Boot0010": true}, HTTPBootURI: pointer("http://10.0.0.1/ipxe.efi")}
	if got, want := c.Differing(b), []string{"order", "enabled:Boot0010", "httpBootURI"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Differing(current) = %v, want %v", got, want)
	}
	if !b.RebootRequired() {
		t.Error("RebootRequired false with pending values")
	}
	n := b.Next()
	if got := c.Differing(n); len(got) != 0 {
		t.Errorf("Differing(next) = %v, want none", got)
	}
	if n.RebootRequired() || b.Options[3].PendingEnabled == nil {
		t.Error("Next left something pending, or changed b's options")
	}
	if got := (bmc.BootOrderChange{Enabled: map[string]bool{"Boot9999": true}}).Differing(n); !reflect.DeepEqual(got, []string{"enabled:Boot9999"}) {
		t.Errorf("Differing(unknown option) = %v", got)
	}
}

func TestValidateBootOrderChange(t *testing.T) {
	b := ilo5Options()
	ok := []bmc.BootOrderChange{
		{Order: []string{"Boot000E"}},
		{Enabled: map[string]bool{"Boot0010": true}},
		{HTTPBootURI: pointer("https://boot.example.com/ipxe.efi")},
	}
	for _, c := range ok {
		if err := bmc.ValidateBootOrderChange(b, c); err != nil {
			t.Errorf("ValidateBootOrderChange(%+v): %v", c, err)
		}
	}
	bad := []struct {
		c    bmc.BootOrderChange
		want string
	}{
		{bmc.BootOrderChange{}, "nothing to change"},
		{bmc.BootOrderChange{Order: []string{"Boot000E", "Boot000E"}}, `order[1] "Boot000E" is given twice`},
		{bmc.BootOrderChange{Order: []string{"Boot9999"}}, `order[0] "Boot9999" is not a boot option of this system; it has "Boot0019", "Boot000E"`},
		{bmc.BootOrderChange{Enabled: map[string]bool{"Nope": false}}, `enabled["Nope"] is not a boot option`},
		{bmc.BootOrderChange{HTTPBootURI: pointer("tftp://10.0.0.1/x")}, `httpBootURI "tftp://10.0.0.1/x" is not an absolute http or https URL`},
		{bmc.BootOrderChange{HTTPBootURI: pointer("http://user:Zq7-secret@host/x")}, `httpBootURI "http://…@host/x"`},
	}
	for _, c := range bad {
		err := bmc.ValidateBootOrderChange(b, c.c)
		if err == nil || !errors.Is(err, bmc.ErrInvalidBootOrder) || bmc.IsTransient(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ValidateBootOrderChange(%+v) = %v; want a permanent ErrInvalidBootOrder containing %q", c.c, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "Zq7-secret") {
			t.Errorf("error %q shows the URI's password", err)
		}
	}
	noURI := ilo5Options()
	noURI.HTTPBootURI = nil
	if err := bmc.ValidateBootOrderChange(noURI, bmc.BootOrderChange{HTTPBootURI: pointer("http://h/x")}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("HTTP boot URI on a BMC without one: %v; want ErrNotSupported", err)
	}
	noOpts := bmc.BootOrder{Order: []string{"Boot0001", "Boot0002"}}
	if err := bmc.ValidateBootOrderChange(noOpts, bmc.BootOrderChange{Order: []string{"Boot0002"}}); err != nil {
		t.Errorf("order against Order when no options are listed: %v", err)
	}
	if err := bmc.ValidateBootOrderChange(noOpts, bmc.BootOrderChange{Enabled: map[string]bool{"Boot0002": false}}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Errorf("enabling an option on a BMC that lists none: %v; want ErrNotSupported", err)
	}
}

func TestBootOrderBound(t *testing.T) {
	var b bmc.BootOrder
	for i := 0; i < bmc.MaxBootOptions+5; i++ {
		b.Order = append(b.Order, "Boot")
		b.Options = append(b.Options, bmc.BootOption{Reference: "Boot", DisplayName: strings.Repeat("é", bmc.MaxBootString)})
	}
	if !b.Bound() {
		t.Fatal("Bound reported nothing cut")
	}
	if len(b.Order) != bmc.MaxBootOptions || len(b.Options) != bmc.MaxBootOptions || len(b.Options[0].DisplayName) > bmc.MaxBootString ||
		!strings.HasSuffix(b.Options[0].DisplayName, "é") {
		t.Errorf("Bound left %d order entries, %d options, a name of %d bytes", len(b.Order), len(b.Options), len(b.Options[0].DisplayName))
	}
	if b.Bound() {
		t.Error("Bound on a bounded state cut again")
	}
}

func FuzzDevicePathMAC(f *testing.F) {
	f.Add("PciRoot(0x4)/Pci(0x4,0x0)/MAC(6805CAE1367C,0x1)/IPv4(0.0.0.0)")
	f.Add("MAC(")
	f.Add("mac(0000000000000,0x1)")
	f.Fuzz(func(t *testing.T, p string) {
		m := bmc.DevicePathMAC(p)
		if m != "" && (len(m) != 17 || strings.Trim(m, "0123456789abcdef:") != "") {
			t.Fatalf("DevicePathMAC(%q) = %q, not a MAC", p, m)
		}
	})
}
