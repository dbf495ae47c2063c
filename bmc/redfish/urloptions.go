package redfish

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// urlOptions are the option names a redfish:// URL may carry
// ([Dialer.DialDriver]).
var urlOptions = []string{"bootOnce", "events", "timeout"}

// withURLOptions applies an endpoint's options (bmc.Endpoint.Options, the
// query of a redfish://, redfish+https:// or redfish+http:// URL) to o, which
// already has its defaults:
//
//	bootOnce=emulate|native  Options.EmulateBootOnce (true|false)
//	events=on|off            Options.NoEventStream (false|true)
//	timeout=10s              Options.RequestTimeout (a Go duration, > 0)
//
// Each may appear once; any other name (names are case-sensitive) or value
// is an error naming the option and what it accepts. Hand-written rather
// than a struct-tag decoder (e.g. gorilla/schema): three names, and the
// errors must name the allowed values, as the ipmi driver's do.
//
// Not options, on purpose: the request budget (RequestsPerSecond,
// RequestBurst) belongs to the physical BMC (bmc.Endpoint.Key) and is shared
// by every address of it, so one address cannot set it; certificate
// verification (InsecureSkipVerify, CACertPEM) is a security decision for
// the Dialer's owner, not for whoever writes an address.
func (o Options) withURLOptions(raw string) (Options, error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return o, fmt.Errorf("redfish: options in the BMC URL: %v", err)
	}
	if len(vals) == 0 {
		return o, fmt.Errorf("redfish: empty options query in the BMC URL: want one of %s", strings.Join(urlOptions, ", "))
	}
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vs := vals[name]
		if !slices.Contains(urlOptions, name) {
			return o, fmt.Errorf("redfish: unknown option %q in the BMC URL: want one of %s", name, strings.Join(urlOptions, ", "))
		}
		if len(vs) != 1 {
			return o, fmt.Errorf("redfish: option %q in the BMC URL is given %d times", name, len(vs))
		}
		v := vs[0]
		bad := func(want string) (Options, error) {
			return o, fmt.Errorf("redfish: option %s=%q in the BMC URL: want %s", name, v, want)
		}
		switch name {
		case "bootOnce":
			switch v {
			case "emulate":
				o.EmulateBootOnce = true
			case "native":
				o.EmulateBootOnce = false
			default:
				return bad("emulate or native")
			}
		case "events":
			switch v {
			case "on":
				o.NoEventStream = false
			case "off":
				o.NoEventStream = true
			default:
				return bad("on or off")
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad("a positive duration such as 30s")
			}
			o.RequestTimeout = d
		}
	}
	return o, nil
}
