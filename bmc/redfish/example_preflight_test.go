package redfish_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// A netboot job on a system whose Boot cannot take a UEFI-mode override
// (an HPE Apollo's iLO 5) is refused before its first effect: the server
// stays on, and the job names the task and what the BMC lacks
// (docs/preflight.md).
func Example_preflight() {
	srv := redfishtest.NewServer(redfishtest.VendorConfig(redfishtest.VendorILO5Apollo))
	defer srv.Close()
	srv.SetPower("1", "On")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(redfish.Options{}))
	store := memstore.New()
	r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{
		Dialer: &dialer, Credentials: bmc.StaticCredentials{"lab": srv.Credentials()},
	}})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	if _, err := r.Submit(ctx, "netboot", job.Spec{BMC: srv.Address("1"), CredentialsRef: "lab", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}); err != nil {
		panic(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	j, err := r.Wait(wctx, "netboot")
	if err != nil {
		panic(err)
	}
	cancel()
	<-done
	fmt.Println(j.Status.Result, j.Status.Reason)
	fmt.Println("task 2:", j.Status.Tasks[1].Reason, "- task 1:", j.Status.Tasks[0].Reason)
	fmt.Println("server:", srv.System("1").Power)
	// Output:
	// Failed NotSupported
	// task 2: NotSupported - task 1: Skipped
	// server: On
}
