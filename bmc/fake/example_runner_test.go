package fake_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// A Fleet is the Dialer of a job Runner in a unit test: the job runs
// against the fake as it would against a BMC, and the fake shows what
// happened. (The package documentation's snippet, run.)
func ExampleFleet_runner() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := fake.NewFleet()
	srv, err := f.AddNew("redfish://10.0.0.1/redfish/v1/Systems/1", fake.Options{Username: "admin", Password: "pw", Power: bmc.PowerOn})
	if err != nil {
		panic(err)
	}
	runner, err := job.NewRunner(job.Config{
		Store: memstore.New(),
		StepperConfig: job.StepperConfig{
			Dialer:      f,
			Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "pw"}},
		},
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- runner.Start(ctx) }()

	_, err = runner.Submit(ctx, "netboot", job.Spec{
		BMC:            "redfish://10.0.0.1/redfish/v1/Systems/1",
		CredentialsRef: "lab",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		},
	})
	if err != nil {
		panic(err)
	}
	j, err := runner.Wait(ctx, "netboot")
	if err != nil {
		panic(err)
	}
	cancel()
	<-done
	fmt.Println("job:", j.Status.Result)
	fmt.Println("power:", srv.State().Power, "booted from:", srv.State().LastBootDevice)
	fmt.Println("logins:", srv.Sessions().Logins)
	// Output:
	// job: Succeeded
	// power: On booted from: pxe
	// logins: 1
}
