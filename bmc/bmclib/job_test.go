package bmclib_test

import (
	"context"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmclib"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
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
	r, err := job.NewRunner(job.Config{
		Store:        memstore.New(),
		Dialer:       &dialers,
		Credentials:  job.StaticCredentials{"lab": sim.Credentials},
		PollInterval: 50 * time.Millisecond,
		ScanInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	spec := job.Spec{
		BMC:            sim.Endpoint.String(),
		CredentialsRef: "lab",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		},
	}
	if _, err := r.Submit(ctx, "netboot", spec); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	j, err := r.Wait(wctx, "netboot")
	if err != nil {
		t.Fatal(err)
	}
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
