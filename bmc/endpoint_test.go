package bmc_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
)

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in       string
		want     bmc.Endpoint
		port     int    // EffectivePort
		hostPort string // HostPort
		systemID string
		str      string // String
		baseURL  string
	}{
		{"redfish://10.0.0.5", bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "10.0.0.5"}, 443, "10.0.0.5:443", "", "redfish://10.0.0.5", "https://10.0.0.5"},
		{"redfish+https://bmc.example:8443/redfish/v1/Systems/1", bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "bmc.example", Port: 8443, Path: "/redfish/v1/Systems/1"}, 8443, "bmc.example:8443", "1", "redfish://bmc.example:8443/redfish/v1/Systems/1", "https://bmc.example:8443"},
		{"redfish+http://10.0.0.5/redfish/v1/Systems/System.Embedded.1/", bmc.Endpoint{Protocol: "redfish", Transport: "http", Host: "10.0.0.5", Path: "/redfish/v1/Systems/System.Embedded.1"}, 80, "10.0.0.5:80", "System.Embedded.1", "redfish+http://10.0.0.5/redfish/v1/Systems/System.Embedded.1", "http://10.0.0.5"},
		{"redfish+http://10.0.0.5:8000", bmc.Endpoint{Protocol: "redfish", Transport: "http", Host: "10.0.0.5", Port: 8000}, 8000, "10.0.0.5:8000", "", "redfish+http://10.0.0.5:8000", "http://10.0.0.5:8000"},
		{"ipmi://10.0.0.6", bmc.Endpoint{Protocol: "ipmi", Host: "10.0.0.6"}, 623, "10.0.0.6:623", "", "ipmi://10.0.0.6", "https://10.0.0.6"},
		{"ipmi://10.0.0.6:6230/", bmc.Endpoint{Protocol: "ipmi", Host: "10.0.0.6", Port: 6230}, 6230, "10.0.0.6:6230", "", "ipmi://10.0.0.6:6230", "https://10.0.0.6:6230"},
		{"redfish://[::1]:8443", bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "::1", Port: 8443}, 8443, "[::1]:8443", "", "redfish://[::1]:8443", "https://[::1]:8443"},
		{"ipmi://[fd00::5]", bmc.Endpoint{Protocol: "ipmi", Host: "fd00::5"}, 623, "[fd00::5]:623", "", "ipmi://[fd00::5]", "https://[fd00::5]"},
		{"REDFISH+HTTPS://Host.Example/redfish/v1/Systems/", bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "Host.Example"}, 443, "Host.Example:443", "", "redfish://Host.Example", "https://Host.Example"},
		{"redfish://h/redfish/v1/Systems", bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "h"}, 443, "h:443", "", "redfish://h", "https://h"},
		{"  ipmi://h  ", bmc.Endpoint{Protocol: "ipmi", Host: "h"}, 623, "h:623", "", "ipmi://h", "https://h"},
		{"redfish://h/redfish/v1/Systems/a%20b", bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "h", Path: "/redfish/v1/Systems/a%20b"}, 443, "h:443", "a%20b", "redfish://h/redfish/v1/Systems/a%20b", "https://h"},
		// Options are kept in canonical order; the driver checks them.
		{"ipmi://h:623?privilege=operator&cipher=3", bmc.Endpoint{Protocol: "ipmi", Host: "h", Port: 623, Options: "cipher=3&privilege=operator"}, 623, "h:623", "", "ipmi://h:623?cipher=3&privilege=operator", "https://h:623"},
		{"ipmi://h/?bootReadBack=device", bmc.Endpoint{Protocol: "ipmi", Host: "h", Options: "bootReadBack=device"}, 623, "h:623", "", "ipmi://h?bootReadBack=device", "https://h"},
		// Redfish addresses take options too (after the path), in every scheme.
		{"redfish://h/redfish/v1/Systems/1?timeout=10s&bootOnce=emulate", bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "h", Path: "/redfish/v1/Systems/1", Options: "bootOnce=emulate&timeout=10s"}, 443, "h:443", "1", "redfish://h/redfish/v1/Systems/1?bootOnce=emulate&timeout=10s", "https://h"},
		{"redfish+http://h:8000/?events=off", bmc.Endpoint{Protocol: "redfish", Transport: "http", Host: "h", Port: 8000, Options: "events=off"}, 8000, "h:8000", "", "redfish+http://h:8000?events=off", "http://h:8000"},
		{"redfish+https://[::1]/redfish/v1/Systems?x=1", bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "::1", Options: "x=1"}, 443, "[::1]:443", "", "redfish://[::1]?x=1", "https://[::1]"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ep, err := bmc.ParseEndpoint(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ep)
			assert.Equal(t, tt.port, ep.EffectivePort())
			assert.Equal(t, tt.hostPort, ep.HostPort())
			assert.Equal(t, tt.systemID, ep.SystemID())
			assert.Equal(t, tt.str, ep.String())
			assert.Equal(t, tt.baseURL, ep.BaseURL())

			back, err := bmc.ParseEndpoint(ep.String())
			require.NoError(t, err, "String() must parse")
			assert.Equal(t, ep, back)
		})
	}
}

func TestParseEndpointErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"empty"}},
		{"ipmi empty query", "ipmi://h?", []string{"empty options query"}},
		{"ipmi query of separators", "ipmi://h?&", []string{"empty options query"}},
		{"ipmi option twice", "ipmi://h?cipher=3&cipher=17", []string{`option "cipher" given 2 times`}},
		{"ipmi option without a name", "ipmi://h?=3", []string{"without a name"}},
		{"ipmi fragment", "ipmi://h?cipher=3#x", []string{"query and fragment are not allowed"}},
		{"blank", "   ", []string{"empty"}},
		{"no scheme", "10.0.0.5", []string{"want scheme://host"}},
		{"no scheme with port", "10.0.0.5:623", []string{"want scheme://host"}},
		{"opaque", "redfish:10.0.0.5", []string{"want scheme://host"}},
		{"unsupported scheme", "idrac://10.0.0.5", []string{`unsupported scheme "idrac"`, "redfish, redfish+https, redfish+http, ipmi"}},
		{"https scheme", "https://10.0.0.5", []string{`unsupported scheme "https"`, "supported:"}},
		{"missing host", "redfish:///redfish/v1/Systems/1", []string{"missing host", "redfish://"}},
		{"missing host ipmi", "ipmi://:623", []string{"missing host"}},
		{"port zero", "ipmi://h:0", []string{`invalid port "0"`}},
		{"port too big", "ipmi://h:65536", []string{`invalid port "65536"`}},
		{"port not a number", "ipmi://h:abc", []string{"invalid port"}},
		{"empty port", "ipmi://h:", []string{"empty port"}},
		{"redfish empty query", "redfish://h?", []string{"empty options query"}},
		{"redfish query of separators", "redfish+http://h/redfish/v1/Systems/1?&&", []string{"empty options query"}},
		{"redfish option twice", "redfish://h?events=off&events=on", []string{`option "events" given 2 times`}},
		{"redfish option without a name", "redfish+https://h?=on", []string{"without a name"}},
		{"redfish bad escape", "redfish://h?timeout=%zz", []string{"options query"}},
		{"redfish query and fragment", "redfish://h?events=off#x", []string{"query and fragment are not allowed"}},
		{"fragment", "redfish://h#frag", []string{"query and fragment are not allowed"}},
		{"empty fragment", "redfish://h/#", []string{"query and fragment are not allowed"}},
		{"ipmi with path", "ipmi://h/redfish/v1/Systems/1", []string{`ipmi addresses take no path, got "/redfish/v1/Systems/1"`}},
		{"redfish path elsewhere", "redfish://h/redfish/v1/Managers/1", []string{`redfish path "/redfish/v1/Managers/1"`, "/redfish/v1/Systems/ID"}},
		{"redfish path prefix only", "redfish://h/redfish/v1/SystemsX/1", []string{`redfish path "/redfish/v1/SystemsX/1"`}},
		{"unbracketed IPv6", "redfish://::1", []string{"must be in brackets"}},
		{"zone", "redfish://[fe80::1%25eth0]", []string{"invalid host"}},
		{"unclosed bracket", "redfish://[::1", []string{"invalid BMC address"}},
		{"control char", "redfish://h\x7f/", []string{"invalid BMC address"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := bmc.ParseEndpoint(tt.in)
			require.Error(t, err, "parsed as %#v", ep)
			assert.Equal(t, bmc.Endpoint{}, ep)
			assert.Contains(t, err.Error(), "bmc: invalid BMC address")
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// Credentials in the URL are refused, and whatever shape the password has,
// the error never repeats it (or a fragment of it).
func TestParseEndpointRefusesCredentials(t *testing.T) {
	for _, in := range []string{
		"redfish://admin:Sup3rSecret@10.0.0.5",
		"redfish://admin:Sup3rSecret@10.0.0.5:8443/redfish/v1/Systems/1",
		"ipmi://admin:Sup3rSecret@10.0.0.6",
		"redfish://admin@10.0.0.5",
		"redfish://admin:Sup3rSecret?@10.0.0.5", // '?' ends the authority early
		"redfish://admin:Sup3rSecret#@10.0.0.5", // '#' too
		"redfish://admin:Sup3r/Secret@10.0.0.5", // '/' too: "Sup3r" would be read as a port
		"redfish://admin:1234/Sup3rSecret@10.0.0.5",
		"redfish://admin:Sup3rSecret@[::1",
		"redfish://admin:Sup3rSecret@h:bad",
		"idrac://admin:Sup3rSecret@10.0.0.5",
		"admin:Sup3rSecret@10.0.0.5",
		"redfish://admin:Sup3r%zzSecret@10.0.0.5",
		"redfish://10.0.0.5/redfish/v1/Systems/admin:Sup3rSecret@x",
	} {
		t.Run(in, func(t *testing.T) {
			_, err := bmc.ParseEndpoint(in)
			require.Error(t, err)
			for _, frag := range []string{"Sup3r", "Secret", "1234"} {
				assert.NotContains(t, err.Error(), frag, "error leaks part of the password")
			}
			if strings.Contains(in, "://") {
				assert.Contains(t, err.Error(), "credentials")
			}
		})
	}
}

func TestEndpointKey(t *testing.T) {
	key := func(s string) string {
		t.Helper()
		ep, err := bmc.ParseEndpoint(s)
		require.NoError(t, err)
		return ep.Key()
	}
	// Same physical BMC through different protocols and spellings.
	assert.Equal(t, key("redfish://bmc.example:623"), key("ipmi://BMC.example"))
	assert.Equal(t, key("redfish://10.0.0.5"), key("redfish+https://10.0.0.5:443/redfish/v1/Systems/2"))
	assert.Equal(t, key("redfish+http://10.0.0.5:443"), key("redfish://10.0.0.5"))
	assert.Equal(t, "[::1]:8443", key("redfish://[::1]:8443"))
	assert.Equal(t, "bmc.example:623", key("ipmi://BMC.Example"))
	// Different ports are different BMCs.
	assert.NotEqual(t, key("ipmi://10.0.0.5"), key("redfish://10.0.0.5"))
	assert.NotEqual(t, key("redfish+http://10.0.0.5"), key("redfish://10.0.0.5"))
}

func TestEndpointStringOfHandBuilt(t *testing.T) {
	ep := bmc.Endpoint{Protocol: "redfish", Transport: "http", Host: "fd00::7", Port: 8000, Path: "/redfish/v1/Systems/X"}
	assert.Equal(t, "redfish+http://[fd00::7]:8000/redfish/v1/Systems/X", ep.String())
	back, err := bmc.ParseEndpoint(ep.String())
	require.NoError(t, err)
	assert.Equal(t, ep, back)
}

// Credentials in a URL's query are refused at parse time (so before a job
// stores the URL), with an error naming the option and where credentials
// go, never the value; driver options still parse.
func TestParseEndpointRefusesCredentialOptions(t *testing.T) {
	const secret = "s3cr3t-value"
	for _, q := range []string{"password", "Password", "PASSWD", "pass%77ord", "pw", "pwd", "user", "username", "token", "secret", "apiKey", "auth", "credentials", "login"} {
		for _, base := range []string{"redfish://10.0.0.5/redfish/v1/Systems/1", "ipmi://10.0.0.6"} {
			_, err := bmc.ParseEndpoint(base + "?cipher=3&" + q + "=" + secret)
			require.Error(t, err, q)
			assert.Contains(t, err.Error(), "credentials in the URL are not accepted")
			assert.Contains(t, err.Error(), "credentialsRef")
			assert.NotContains(t, err.Error(), secret)
		}
	}
	for _, ok := range []string{"ipmi://h?cipher=17,3&privilege=operator&bootReadBack=none&timeout=2s", "redfish://h?bootOnce=emulate&events=off&timeout=5s"} {
		_, err := bmc.ParseEndpoint(ok)
		assert.NoError(t, err, ok)
	}
}

func TestRedacted(t *testing.T) {
	ep, err := bmc.ParseEndpoint("ipmi://10.0.0.6:6230?cipher=3&timeout=2s")
	require.NoError(t, err)
	assert.Equal(t, "ipmi://10.0.0.6:6230?…", ep.Redacted())
	ep, err = bmc.ParseEndpoint("redfish://10.0.0.5/redfish/v1/Systems/1")
	require.NoError(t, err)
	assert.Equal(t, "redfish://10.0.0.5/redfish/v1/Systems/1", ep.Redacted())
	for in, want := range map[string]string{
		"redfish://u:p?w@ss@h/x?password=y": "redfish://…@h/x…",
		"ipmi://h?password=y#z":             "ipmi://h…",
		"not a url @ all":                   "…@ all",
		"redfish://h/redfish/v1/Systems/1":  "redfish://h/redfish/v1/Systems/1",
	} {
		assert.Equal(t, want, bmc.RedactURL(in), in)
	}
	e := &bmc.OpError{Op: "dial", Endpoint: "ipmi://h?foo=" + "hunter2", Err: bmc.ErrNotSupported}
	assert.NotContains(t, e.Error(), "hunter2")
}
