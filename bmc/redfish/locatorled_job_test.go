package redfish_test

// locatorLED and nmi tasks through job.Runner and the Redfish driver
// against redfishtest, over HTTP.

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// Locator on (on the chassis where the system has none), then an NMI:
// the LED reads back, one PATCH and one Nmi POST reach the BMC.
func TestLocatorLEDAndNMIJob(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   redfishtest.Config
		patch string
	}{
		{"system", redfishtest.Config{}, "PATCH /redfish/v1/Systems/1"},
		{"chassis", redfishtest.Config{Locator: redfishtest.LocatorChassis}, "PATCH /redfish/v1/Chassis/1"},
		{"iLO 5", redfishtest.VendorConfig(redfishtest.VendorILO5Apollo), "PATCH /redfish/v1/Systems/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redfishtest.NewServer(c.cfg)
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runFirmwareJob(t, srv, oneTask(srv,
				task.Spec{LocatorLED: &task.LocatorLEDAction{State: task.LEDOn}},
				task.Spec{NMI: &task.NMIAction{}}))
			requireSucceeded(t, j)
			if got := srv.LocatorLED("1"); got != "Lit" {
				t.Errorf("the simulator's locator is %s, want Lit", got)
			}
			if !strings.Contains(j.Status.Tasks[0].Message, "reads On") {
				t.Errorf("task 1: %s", j.Status.Tasks[0].Message)
			}
			sc := stateChanging(srv)
			want := []string{c.patch, "POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset"}
			if strings.Join(sc, "; ") != strings.Join(want, "; ") {
				t.Errorf("state-changing requests %v; want %v", sc, want)
			}
			if n := srv.System("1").Resets["Nmi"]; n != 1 {
				t.Errorf("%d NMIs reached the simulator, want 1", n)
			}
		})
	}
}

// Blinking on iLO 5 (IndicatorLED Lit or Off), an NMI on a BMC that does
// not list Nmi: the job fails its preflight NotSupported with 0
// state-changing requests, the power change before them included.
func TestLocatorLEDAndNMIJobNotSupported(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  redfishtest.Config
		spec task.Spec
	}{
		{"blink on iLO 5", redfishtest.VendorConfig(redfishtest.VendorILO5Apollo), task.Spec{LocatorLED: &task.LocatorLEDAction{State: task.LEDBlinking}}},
		{"no locator", redfishtest.Config{Locator: redfishtest.LocatorNone}, task.Spec{LocatorLED: &task.LocatorLEDAction{State: task.LEDOn}}},
		{"no Nmi", redfishtest.Config{ResetTypes: []string{"On", "ForceOff"}}, task.Spec{NMI: &task.NMIAction{}}},
		{"no Nmi in ActionInfo (AMI)", redfishtest.Config{ResetTypesInActionInfo: true, ResetTypes: []string{"On", "ForceOff"}}, task.Spec{NMI: &task.NMIAction{}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redfishtest.NewServer(c.cfg)
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runFirmwareJob(t, srv, oneTask(srv, task.Spec{Power: &task.PowerAction{Op: task.PowerOff}}, c.spec))
			if j.Status.Result != conditions.ResultFailed || j.Status.Tasks[1].Reason != conditions.ReasonNotSupported {
				t.Fatalf("job %s, task 2 %s: %s", j.Status.Result, j.Status.Tasks[1].Reason, j.Status.Tasks[1].Message)
			}
			if sc := stateChanging(srv); len(sc) != 0 {
				t.Errorf("state-changing requests %v; want none", sc)
			}
		})
	}
}
