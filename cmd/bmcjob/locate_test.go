package main

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// locate sets the LED on redfishtest and reads it back; nmi sends the
// Nmi reset. Both run with -simulate too.
func TestLocateAndNMIAgainstRedfishtest(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	defer srv.Close()
	c := srv.Credentials()
	target := []string{"-bmc", srv.Address("1"), "-user", c.Username, "-insecure"}
	for _, st := range []struct{ arg, led string }{{"blink", "Blinking"}, {"off", "Off"}, {"on", "Lit"}} {
		out, err := runOut(t, c.Password, append([]string{"locate", st.arg}, target...)...)
		if err != nil || !strings.Contains(out, ": Succeeded: the locator LED reads") {
			t.Errorf("locate %s: %v\n%s", st.arg, err, out)
		}
		if got := srv.LocatorLED("1"); got != st.led {
			t.Errorf("after locate %s the BMC's LED is %q, want %q", st.arg, got, st.led)
		}
	}
	// Off: one message, on standard output, saying why.
	out, err := runOut(t, c.Password, append([]string{"nmi"}, target...)...)
	if err == nil || !strings.Contains(out, "a diagnostic interrupt needs a running host") {
		t.Errorf("nmi with the server off: %v\n%s", err, out)
	}
	srv.SetPower("1", "On")
	srv.ClearRequests()
	out, err = runOut(t, c.Password, append([]string{"nmi"}, target...)...)
	if err != nil || !strings.Contains(out, "send NMI: Succeeded") {
		t.Fatalf("nmi: %v\n%s", err, out)
	}
	nmis := 0
	for _, r := range srv.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/Actions/ComputerSystem.Reset") {
			nmis++
		}
	}
	if nmis != 1 {
		t.Errorf("nmi sent %d resets, want 1", nmis)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"locate"}, "locate: want one of on, off, blink"},
		{[]string{"locate", "flash"}, `locate: "flash" is not one of on, off, blink`},
		{[]string{"nmi", "now"}, "nmi: takes no arguments"},
	} {
		if _, err := runOut(t, "", append(c.args, "-simulate")...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bmcjob %s: %v; want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	for _, args := range [][]string{{"locate", "blink"}, {"nmi"}} {
		if out, err := runOut(t, "", append(args, "-simulate")...); err != nil || !strings.Contains(out, "Succeeded") {
			t.Errorf("bmcjob %s -simulate: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
