package redfish

import (
	"errors"
	"time"

	"github.com/bmckit/bmckit/bmc"
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
// errors must name the allowed values; bmc.EachOption does the walking and
// the error wording shared with the ipmi driver and the bmclib adapter.
//
// Not options, on purpose: the request budget (RequestsPerSecond,
// RequestBurst) belongs to the physical BMC (bmc.Endpoint.Key) and is shared
// by every address of it, so one address cannot set it; certificate
// verification (InsecureSkipVerify, CACertPEM) is a security decision for
// the Dialer's owner, not for whoever writes an address.
func (o Options) withURLOptions(raw string) (Options, error) {
	err := bmc.EachOption("redfish", raw, urlOptions, func(name, v string) error {
		switch name {
		case "bootOnce":
			switch v {
			case "emulate":
				o.EmulateBootOnce = true
			case "native":
				o.EmulateBootOnce = false
			default:
				return errors.New("want emulate or native")
			}
		case "events":
			switch v {
			case "on":
				o.NoEventStream = false
			case "off":
				o.NoEventStream = true
			default:
				return errors.New("want on or off")
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return errors.New("want a positive duration such as 30s")
			}
			o.RequestTimeout = d
		}
		return nil
	})
	return o, err
}
