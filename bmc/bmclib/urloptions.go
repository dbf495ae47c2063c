package bmclib

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
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
	err := bmc.EachOption("bmclib", raw, ipmitoolURLOptions, func(name, v string) error {
		switch name {
		case "cipher":
			if strings.Contains(v, ",") {
				return fmt.Errorf("bmclib's ipmitool provider takes one cipher suite (without the option it tries 3, then 17); name one, or use the ipmi driver for a list")
			}
			n, err := strconv.Atoi(v)
			switch {
			case err != nil || n < 0 || n > 255:
				return fmt.Errorf("want a cipher suite ID such as 3 or 17")
			case n == 0:
				return fmt.Errorf("cipher suite 0 authenticates nothing")
			}
			o.CipherSuite = n
		case "privilege":
			switch v {
			case "administrator":
			case "operator", "user":
				return fmt.Errorf("bmclib's ipmitool provider cannot set ipmitool's privilege level (-L); it always asks for administrator, ipmitool's default: remove the option, or use the ipmi driver")
			default:
				return fmt.Errorf("want administrator, operator or user")
			}
		case "bootReadBack":
			switch v {
			case "none":
			case "full", "device":
				return fmt.Errorf("the bmclib adapter cannot read the boot override back (bmclib's ipmitool provider has no getter), so only none applies: use bootReadBack=none, or the ipmi driver")
			default:
				return fmt.Errorf("want full, device or none")
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("want a positive duration such as 5s")
			}
			o.Timeout, o.DialTimeout = d, d
		}
		return nil
	})
	return o, err
}
