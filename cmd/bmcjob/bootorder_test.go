package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// bootorder on redfishtest: set -order, -enable and -http-boot-uri land on
// the BMC and status reads them back; on the Dell-like personality (held
// until the next boot) set says a reboot is required and status shows the
// pending order; an unknown reference fails before anything is sent.
func TestBootOrderAgainstRedfishtest(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	defer srv.Close()
	c := srv.Credentials()
	target := []string{"-bmc", srv.Address("1"), "-user", c.Username, "-insecure"}
	bo := func(srv *redfishtest.Server, args ...string) (string, string, error) {
		return runIO(t, c.Password, append(append([]string{"bootorder"}, args...), "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")...)
	}

	stdout, stderr, err := bo(srv, "set", "--order", "Boot0002,Boot0001", "--enable", "Boot0004", "--http-boot-uri", "https://boot.example/ipxe.efi")
	if err != nil || !strings.Contains(stdout, "set the boot order: Succeeded") || strings.Contains(stdout, "reboot required") {
		t.Fatalf("bootorder set: %v\n%s%s", err, stdout, stderr)
	}
	if order, held := srv.BootOrder("1"); strings.Join(order, ",") != "Boot0002,Boot0001,Boot0003,Boot0004" || held != nil {
		t.Errorf("the BMC's order is %v (held %v)", order, held)
	}
	stdout, _, err = bo(srv, "status", "-json")
	var b bmc.BootOrder
	if err != nil || json.Unmarshal([]byte(stdout), &b) != nil {
		t.Fatalf("bootorder status -json: %v\n%s", err, stdout)
	}
	if o, _ := b.Option("Boot0004"); !o.Enabled || b.HTTPBootURI == nil || *b.HTTPBootURI != "https://boot.example/ipxe.efi" || b.Order[0] != "Boot0002" {
		t.Errorf("bootorder status -json after set: %+v", b)
	}
	stdout, _, err = bo(srv, "status")
	if err != nil || !strings.HasPrefix(stdout, "order: Boot0002,Boot0001,Boot0003,Boot0004\nhttp boot uri: https://boot.example/ipxe.efi\n") {
		t.Errorf("bootorder status:\n%s", stdout)
	}

	srv.ClearRequests()
	stdout, _, err = bo(srv, "set", "-order", "Boot00FF")
	if err == nil || !strings.Contains(stdout, "Boot00FF") {
		t.Errorf("bootorder set -order Boot00FF: %v\n%s", err, stdout)
	}
	for _, r := range srv.Requests() {
		if r.Method == "PATCH" {
			t.Errorf("an unknown reference sent %s %s", r.Method, r.Path)
		}
	}

	dell := redfishtest.NewTLSServer(redfishtest.Config{BootOrder: redfishtest.BootOrderOnReset})
	defer dell.Close()
	stdout, _, err = bo(dell, "set", "-order", "Boot0003")
	if err != nil || !strings.Contains(stdout, "reboot required") {
		t.Errorf("bootorder set on a BMC that holds it for the next boot: %v\n%s", err, stdout)
	}
	stdout, _, err = bo(dell, "status")
	if err != nil || !strings.Contains(stdout, "next boot: Boot0003,") {
		t.Errorf("bootorder status with a pending order: %v\n%s", err, stdout)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set"}, "bootorder set: give -order, -enable, -disable or -http-boot-uri"},
		{[]string{"set", "-enable", "Boot0001", "-disable", "Boot0001"}, `-enable and -disable both name "Boot0001"`},
		{[]string{"set", "-order", "Boot0001,Boot0001"}, `invalid value "Boot0001,Boot0001" for flag -order: "Boot0001" is given twice`},
		{[]string{"set", "-order", "Boot0001,"}, "for flag -order"},
		{[]string{"set", "-http-boot-uri", "tftp://x/y"}, `-http-boot-uri "tftp://x/y": want an absolute http:// or https:// URL`},
		{[]string{"reorder"}, `bootorder: "reorder" is not one of status, set`},
		{[]string{}, "bootorder: want status or set"},
	} {
		args := append(append([]string{"bootorder"}, c.args...), target...)
		if _, err := runOut(t, srv.Credentials().Password, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bmcjob %s: %v; want %q", strings.Join(args, " "), err, c.want)
		}
	}
}

func TestBootOrderSimulated(t *testing.T) {
	out, err := runOut(t, "", "bootorder", "status", "-simulate")
	if err != nil || !strings.Contains(out, "Boot0001  true") || !strings.Contains(out, "UEFI PXEv4") {
		t.Errorf("bootorder status -simulate: %v\n%s", err, out)
	}
	out, err = runOut(t, "", "bootorder", "set", "-disable", "Boot0001", "-simulate")
	if err != nil || !strings.Contains(out, "set the boot order: Succeeded") {
		t.Errorf("bootorder set -disable -simulate: %v\n%s", err, out)
	}
}
