package job_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// Run a netboot job with the worker-pool Runner on a fake BMC and an
// in-memory store.
func ExampleRunner() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fleet := fake.NewFleet()
	_, _ = fleet.AddNew("redfish://10.0.0.5/redfish/v1/Systems/1", fake.Options{Username: "admin", Password: "pw", Power: bmc.PowerOn})

	runner, err := job.NewRunner(job.Config{
		Store:       memstore.New(),
		Dialer:      fleet,
		Credentials: job.StaticCredentials{"bmc-5": {Username: "admin", Password: "pw"}},
	})
	if err != nil {
		panic(err)
	}
	go func() { _ = runner.Start(ctx) }()

	_, err = runner.Submit(ctx, "netboot-5", job.Spec{
		BMC:            "redfish://10.0.0.5/redfish/v1/Systems/1",
		CredentialsRef: "bmc-5",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		},
	})
	if err != nil {
		panic(err)
	}
	j, err := runner.Wait(ctx, "netboot-5")
	if err != nil {
		panic(err)
	}
	for _, c := range j.Status.Conditions {
		fmt.Printf("%s=%s (%s)\n", c.Type, c.Status, c.Reason)
	}
	fmt.Println("result:", j.Status.Result, "-", j.Status.Message)
	// Output:
	// Completed=True (Succeeded)
	// Running=False (Succeeded)
	// result: Succeeded - all 3 tasks succeeded
}

// Advance a job one step at a time, as a controller's reconcile loop does
// with the job kept in its own object (here a variable).
func ExampleStepper() {
	b := fake.New(fake.Options{Power: bmc.PowerOn})
	stepper, err := job.NewStepper(job.StepperConfig{Dialer: b})
	if err != nil {
		panic(err)
	}
	defer stepper.Close(context.Background())

	obj := &job.Job{Name: "reprovision", Generation: 1, Spec: job.Spec{
		BMC:   "ipmi://10.0.0.6",
		Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerCycle}}},
	}}
	// persist is where a controller patches its CRD status.
	persist := func(ctx context.Context, j *job.Job) error { obj = j; return nil }
	for {
		res, err := stepper.Step(context.Background(), obj, persist)
		if err != nil {
			panic(err)
		}
		if res.Done {
			break
		}
		// A controller returns ctrl.Result{RequeueAfter: res.RequeueAfter}.
	}
	fmt.Println(obj.Status.Result, obj.Status.Tasks[0].Message, "sessions:", b.Sessions().Logins)
	// Output:
	// Succeeded On sessions: 1
}
