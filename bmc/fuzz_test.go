package bmc_test

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// FuzzParseEndpoint: parsing never panics; an accepted endpoint renders
// (String) to a URL that parses back to the same Endpoint; and an input
// carrying "user:pass@" never yields an error mentioning the password.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{
		"redfish://10.0.0.5",
		"redfish+https://bmc.example:8443/redfish/v1/Systems/1",
		"redfish+http://10.0.0.5/redfish/v1/Systems/System.Embedded.1/",
		"ipmi://10.0.0.6:623",
		"redfish://[::1]:8443",
		"REDFISH://H/redfish/v1/Systems/",
		"redfish://h/redfish/v1/Systems/a%20b",
		"redfish://user:pass@10.0.0.5",
		"redfish://user:pass?@10.0.0.5",
		"redfish://user:pa/ss@10.0.0.5",
		"ipmi://h:623?cipher=3&privilege=operator&bootReadBack=device", "ipmi://h?a=1?b&c",
		"redfish://h/redfish/v1/Systems/1?bootOnce=emulate&events=off&timeout=10s",
		"redfish+http://h:8000/?timeout=1s", "redfish+https://[::1]/redfish/v1/Systems?events=on",
		"redfish://h?events=off&events=on", "redfish://h?=x", "redfish://h?a=%zz", "redfish://h?a#b",
		"redfish://h/redfish/v1/Systems/a%20b?x=a%26b",
		"ipmi://h/x", "idrac://h", "10.0.0.5", "redfish://::1", "redfish://h?", "",
		"ipmi://h?password=x", "redfish://h?cipher=3&Token=y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ep, err := bmc.ParseEndpoint(in)
		if err != nil {
			if strings.Contains(in, "user:pass@") && strings.Contains(err.Error(), "pass") {
				t.Fatalf("error mentions the password: %v", err)
			}
			return
		}
		if ep.Protocol != "redfish" && ep.Protocol != "ipmi" {
			t.Fatalf("accepted protocol %q", ep.Protocol)
		}
		if ep.Host == "" {
			t.Fatalf("accepted an empty host from %q", in)
		}
		s := ep.String()
		back, err := bmc.ParseEndpoint(s)
		if err != nil {
			t.Fatalf("ParseEndpoint(%q) ok, but its String %q does not parse: %v", in, s, err)
		}
		if back != ep {
			t.Fatalf("round trip of %q via %q: %#v != %#v", in, s, back, ep)
		}
		if back.Key() != ep.Key() {
			t.Fatalf("key changed")
		}
		if r := ep.Redacted(); strings.Contains(r, "?"+ep.Options) && ep.Options != "" {
			t.Fatalf("Redacted %q repeats the options %q", r, ep.Options)
		}
		if r := bmc.RedactURL(in); strings.Contains(r, "@") && !strings.Contains(r, "…@") {
			t.Fatalf("RedactURL(%q) = %q keeps user info", in, r)
		}
		_ = ep.HostPort()
		_ = ep.BaseURL()
		_ = ep.SystemID()
	})
}
