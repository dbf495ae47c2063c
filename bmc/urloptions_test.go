package bmc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func TestEachOption(t *testing.T) {
	known := []string{"events", "timeout"}
	var seen []string
	set := func(name, v string) error {
		if v == "bad" {
			return errors.New("want on or off")
		}
		seen = append(seen, name+"="+v)
		return nil
	}
	if err := bmc.EachOption("drv", "timeout=2s&events=on", known, set); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, ","); got != "events=on,timeout=2s" {
		t.Errorf("options applied as %s, want in name order", got)
	}
	for raw, want := range map[string]string{
		"events=bad":         `drv: option events="bad" in the BMC URL: want on or off`,
		"colour=red":         `drv: unknown option "colour" in the BMC URL: want one of events, timeout`,
		"events=on&events=x": `drv: option "events" in the BMC URL is given 2 times`,
		"":                   `drv: empty options query in the BMC URL: want one of events, timeout`,
		"events=%zz":         `drv: options in the BMC URL:`,
	} {
		err := bmc.EachOption("drv", raw, known, set)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", raw, err, want)
		}
	}
}
