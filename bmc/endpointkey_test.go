package bmc_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// Key and SystemKey are built by hand; they must equal the plain formula.
func TestEndpointKeyMatchesJoinHostPort(t *testing.T) {
	for _, e := range []bmc.Endpoint{
		{Protocol: "redfish", Transport: "https", Host: "10.0.0.5", Path: "/redfish/v1/Systems/1"},
		{Protocol: "redfish", Transport: "http", Host: "BMC-1.Example.COM", Port: 8000},
		{Protocol: "ipmi", Host: "fd00::1"},
		{Protocol: "ipmi", Host: "FD00::ABCD", Port: 6230},
		{Protocol: "redfish", Transport: "https", Host: "ÄRGER.example", Path: "/redfish/v1/Systems/Ö"},
		{Protocol: "redfish", Transport: "https", Host: strings.Repeat("h", 300), Path: strings.Repeat("/p", 200)},
	} {
		checkKeys(t, e)
	}
}

func checkKeys(t *testing.T, e bmc.Endpoint) {
	t.Helper()
	want := strings.ToLower(net.JoinHostPort(e.Host, strconv.Itoa(e.EffectivePort())))
	if got := e.Key(); got != want {
		t.Errorf("%+v: Key() = %q, want %q", e, got, want)
	}
	if got := e.SystemKey(); got != want+e.Path {
		t.Errorf("%+v: SystemKey() = %q, want %q", e, got, want+e.Path)
	}
}

func FuzzEndpointKey(f *testing.F) {
	f.Add("10.0.0.5", 0, "/redfish/v1/Systems/1", "redfish")
	f.Add("FD00::1", 623, "", "ipmi")
	f.Add("Ä\xffb", 1, "/x", "redfish")
	f.Fuzz(func(t *testing.T, host string, port int, path, proto string) {
		checkKeys(t, bmc.Endpoint{Protocol: proto, Transport: "https", Host: host, Port: port, Path: path})
	})
}
