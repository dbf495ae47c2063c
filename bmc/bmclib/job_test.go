package bmclib_test

import (
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmclib"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
)

// TestNetbootJobIPMIToolOpenIPMI runs a netboot job (power off, PXE once,
// power on) through job.Runner with the bmclib adapter over ipmitool
// against ipmi_sim, and checks ipmi_sim's own state.
func TestNetbootJobIPMIToolOpenIPMI(t *testing.T) {
	t.Parallel()
	d := ipmitoolDialer(t, bmclib.IPMIToolOptions{CipherSuite: 3})
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{PoweredOn: true})
	var dialers bmc.SchemeDialer
	dialers.Register("ipmi", d)
	j := jobtest.Run(t, job.Config{StepperConfig: job.StepperConfig{Dialer: &dialers, PollInterval: 50 * time.Millisecond}, ScanInterval: 50 * time.Millisecond},
		sim.Credentials, jobtest.Netboot(sim.Endpoint.String(), "", 0), 2*time.Minute)
	if !conditions.IsTrue(j.Status.Conditions, conditions.TypeCompleted) || j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job ended %s (%s): %s", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	if dev, err := sim.BootDevice(); err != nil || dev != "pxe" {
		t.Errorf("ipmi_sim boot device %q (%v), want pxe", dev, err)
	}
	if on, err := sim.PoweredOn(); err != nil || !on {
		t.Errorf("ipmi_sim powered on = %v (%v), want on", on, err)
	}
}
