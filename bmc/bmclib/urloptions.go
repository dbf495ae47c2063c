package bmclib

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ipmitoolURLOptions are the option names an ipmi:// URL may carry for
// [IPMIToolDialer] (the ipmi driver's names; see package bmc/ipmi).
var ipmitoolURLOptions = []string{"bootReadBack", "cipher", "privilege", "timeout"}

// withURLOptions applies an endpoint's options (bmc.Endpoint.Options) to
// opts, or fails naming the option bmclib's ipmitool provider cannot honour.
//
//	cipher=3          IPMIToolOptions.CipherSuite (one suite: the provider
//	                  passes one -C to ipmitool, or tries 3 then 17)
//	privilege=administrator
//	                  accepted: ipmitool's default; the provider cannot pass
//	                  -L, so operator and user are refused
//	bootReadBack=none accepted: the adapter never reads the boot override
//	                  back; full and device are refused
//	timeout=5s        IPMIToolOptions.Timeout and DialTimeout (the bound of
//	                  each ipmitool run; ipmitool's own per-request timeout
//	                  stays bmclib's 5 s)
//
// Each may appear once; any other name or value is an error.
func (o IPMIToolOptions) withURLOptions(raw string) (IPMIToolOptions, error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return o, fmt.Errorf("bmclib: options in the BMC URL: %v", err)
	}
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vs := vals[name]
		if len(vs) != 1 {
			return o, fmt.Errorf("bmclib: option %q in the BMC URL is given %d times", name, len(vs))
		}
		v := vs[0]
		bad := func(format string, args ...any) (IPMIToolOptions, error) {
			return o, fmt.Errorf("bmclib: option %s=%q in the BMC URL: "+format, append([]any{name, v}, args...)...)
		}
		switch name {
		case "cipher":
			if strings.Contains(v, ",") {
				return bad("bmclib's ipmitool provider takes one cipher suite (without the option it tries 3, then 17); name one, or use the ipmi driver for a list")
			}
			n, err := strconv.Atoi(v)
			switch {
			case err != nil || n < 0 || n > 255:
				return bad("want a cipher suite ID such as 3 or 17")
			case n == 0:
				return bad("cipher suite 0 authenticates nothing")
			}
			o.CipherSuite = n
		case "privilege":
			switch v {
			case "administrator":
			case "operator", "user":
				return bad("bmclib's ipmitool provider cannot set ipmitool's privilege level (-L); it always asks for administrator, ipmitool's default: remove the option, or use the ipmi driver")
			default:
				return bad("want administrator, operator or user")
			}
		case "bootReadBack":
			switch v {
			case "none":
			case "full", "device":
				return bad("the bmclib adapter cannot read the boot override back (bmclib's ipmitool provider has no getter), so only none applies: use bootReadBack=none, or the ipmi driver")
			default:
				return bad("want full, device or none")
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return bad("want a positive duration such as 5s")
			}
			o.Timeout, o.DialTimeout = d, d
		default:
			return o, fmt.Errorf("bmclib: unknown option %q in the BMC URL: want one of %s", name, strings.Join(ipmitoolURLOptions, ", "))
		}
	}
	return o, nil
}
