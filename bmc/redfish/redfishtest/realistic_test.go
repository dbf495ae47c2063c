package redfishtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
)

// TestRealistic: the preset's sessions expire after 30 idle minutes, power
// changes show PoweringOn for 4 s, the next boot consumes a Once override,
// and a Manager.Reset silences the BMC for 90 s; all on a fake clock.
func TestRealistic(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := redfishtest.Realistic()
	cfg.Clock = clk
	srv := redfishtest.NewServer(cfg)
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	if got := cl.login("admin", "redfishtest-secret"); got != 201 {
		t.Fatalf("login: %d", got)
	}
	if _, body := cl.do("GET", "/redfish/v1/SessionService", "", nil); !strings.Contains(body, `"SessionTimeout":1800`) {
		t.Errorf("SessionService does not report SessionTimeout 1800: %s", body)
	}
	sys := "/redfish/v1/Systems/1"
	if resp, _ := cl.do("PATCH", sys, `{"Boot":{"BootSourceOverrideEnabled":"Once","BootSourceOverrideTarget":"Pxe"}}`, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("PATCH Once: %d", resp.StatusCode)
	}
	if resp, _ := cl.do("POST", sys+"/Actions/ComputerSystem.Reset", `{"ResetType":"On"}`, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("reset On: %d", resp.StatusCode)
	}
	clk.Advance(3 * time.Second)
	if st := srv.System("1"); st.Power != "Off" || st.Pending != "On" || st.BootEnabled != "Once" {
		t.Fatalf("3 s after On: power %q pending %q, boot %q; want a pending On and the override still there", st.Power, st.Pending, st.BootEnabled)
	}
	if _, body := cl.do("GET", sys, "", nil); !strings.Contains(body, `"PowerState":"PoweringOn"`) {
		t.Fatalf("3 s after On the system does not report PoweringOn: %s", body)
	}
	clk.Advance(time.Second)
	if st := srv.System("1"); st.Power != "On" || st.BootEnabled != "Disabled" {
		t.Fatalf("4 s after On: power %q, boot %q; want On and the Once override consumed", st.Power, st.BootEnabled)
	}

	clk.Advance(29 * time.Minute)
	if resp, _ := cl.do("GET", sys, "", nil); resp.StatusCode != 200 {
		t.Fatalf("after 29 idle minutes: %d, want 200", resp.StatusCode)
	}
	clk.Advance(31 * time.Minute)
	if resp, _ := cl.do("GET", sys, "", nil); resp.StatusCode != 401 {
		t.Fatalf("after 31 idle minutes: %d, want 401", resp.StatusCode)
	}

	cl.login("admin", "redfishtest-secret")
	if resp, _ := cl.do("POST", "/redfish/v1/Managers/BMC/Actions/Manager.Reset", `{"ResetType":"GracefulRestart"}`, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("Manager.Reset: %d", resp.StatusCode)
	}
	clk.Advance(89 * time.Second)
	if !srv.Down() {
		t.Fatal("the BMC answers 89 s into a 90 s downtime")
	}
	clk.Advance(2 * time.Second)
	if srv.Down() {
		t.Fatal("the BMC is still down after 91 s")
	}
	if resp, _ := cl.do("GET", sys, "", nil); resp.StatusCode != 401 {
		t.Fatalf("the old session after the BMC reset: %d, want 401 (forgotten)", resp.StatusCode)
	}
}
