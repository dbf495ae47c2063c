package bmc

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// EachOption walks an endpoint's options query ([Endpoint.Options]) for a
// driver: it calls set once per option, in name order, with the option's
// value. It fails, naming the option, when a name is not in known, when a
// name is given more than once, or when set refuses the value; set returns
// what the option accepts ("want on or off") and EachOption adds the driver,
// the name and the value:
//
//	redfish: option events="maybe" in the BMC URL: want on or off
//
// Every driver that reads options from the URL (ipmi, redfish, the bmclib
// adapter) uses it, so they parse and report alike. The errors carry no
// secret: a BMC URL holds no credentials.
func EachOption(driver, raw string, known []string, set func(name, value string) error) error {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return fmt.Errorf("%s: options in the BMC URL: %v", driver, err)
	}
	if len(vals) == 0 {
		return fmt.Errorf("%s: empty options query in the BMC URL: want one of %s", driver, strings.Join(known, ", "))
	}
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vs := vals[name]
		if !slices.Contains(known, name) {
			return fmt.Errorf("%s: unknown option %q in the BMC URL: want one of %s", driver, name, strings.Join(known, ", "))
		}
		if len(vs) != 1 {
			return fmt.Errorf("%s: option %q in the BMC URL is given %d times", driver, name, len(vs))
		}
		if err := set(name, vs[0]); err != nil {
			return fmt.Errorf("%s: option %s=%q in the BMC URL: %w", driver, name, vs[0], err)
		}
	}
	return nil
}
