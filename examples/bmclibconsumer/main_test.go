package main

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bmclibv2 "github.com/bmc-toolbox/bmclib/v2"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
)

// The module that uses bmclib's root client builds with bmckit's packages
// and runs a bmckit job against a fake BMC.
func TestJobRunsNextToBmclib(t *testing.T) {
	res, err := run(context.Background(), filepath.Join(t.TempDir(), "bmckit.db"))
	if err != nil {
		t.Fatal(err)
	}
	if res != conditions.ResultSucceeded {
		t.Fatalf("job result %q, want Succeeded", res)
	}
}

// The bmclib dialer is what a SchemeDialer calls for redfish:// addresses:
// against a port nothing listens on, the dial goes through bmclib's client
// and fails with bmckit's error type naming the address, not the password.
func TestBmclibDialerIsPluggedIn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close()
	var d bmc.SchemeDialer
	d.Register("redfish", bmclibDialer(bmclibv2.WithPerProviderTimeout(5*time.Second)))
	ep, err := bmc.ParseEndpoint("redfish://127.0.0.1:" + strconv.Itoa(addr.Port) + "/redfish/v1/Systems/1")
	if err != nil {
		t.Fatal(err)
	}
	const pw = "consumer-Pw-5521"
	drv, err := d.Dial(context.Background(), ep, bmc.Credentials{Username: "admin", Password: pw})
	if err == nil {
		drv.Close(context.Background())
		t.Fatal("dialing a closed port succeeded")
	}
	var op *bmc.OpError
	if !errors.As(err, &op) || !strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(addr.Port)) || strings.Contains(err.Error(), pw) {
		t.Fatalf("dial error: %v", err)
	}
	t.Log(err)
}
