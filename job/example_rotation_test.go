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

// Rotate a BMC's password with a rotateCredentials task. The credentials
// resolver is a bmc.CredentialsStore (here in memory; bmc.FileCredentials
// or a Kubernetes Secret in production): the new password is generated to
// the BMC's policy, stored there as pending before the BMC is changed, and
// promoted to current once a new login with it worked
// (docs/credential-rotation.md). The job never holds it.
func Example_rotateCredentials() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fleet := fake.NewFleet()
	srv, _ := fleet.AddNew("redfish://10.0.0.7/redfish/v1/Systems/1", fake.Options{Username: "admin", Password: "factory-pw",
		Accounts: fake.AccountOptions{Policy: bmc.PasswordPolicy{MinLength: 12, MaxLength: 20}}})
	creds := bmc.NewMemoryCredentials(map[string]bmc.Credentials{"bmc-7": {Username: "admin", Password: "factory-pw"}})

	runner, err := job.NewRunner(job.Config{Store: memstore.New(), StepperConfig: job.StepperConfig{Dialer: fleet, Credentials: creds}})
	if err != nil {
		panic(err)
	}
	go func() { _ = runner.Start(ctx) }()
	_, err = runner.Submit(ctx, "rotate-7", job.Spec{
		BMC:            "redfish://10.0.0.7/redfish/v1/Systems/1",
		CredentialsRef: "bmc-7",
		Tasks:          []task.Spec{{RotateCredentials: &task.RotateCredentialsAction{Mode: task.RotationPassword}}},
	})
	if err != nil {
		panic(err)
	}
	j, err := runner.Wait(ctx, "rotate-7")
	if err != nil {
		panic(err)
	}
	cur, _ := creds.Resolve(ctx, "bmc-7")
	_, pending, _ := creds.Pending(ctx, "bmc-7")
	fmt.Println("result:", j.Status.Result, "-", j.Status.Tasks[0].Message)
	fmt.Println("stage:", j.Status.Tasks[0].Rotation.Stage)
	fmt.Println("new password length:", len(cur.Password), "pending left:", pending)
	fmt.Println("BMC takes the new password:", srv.AccountPassword("admin", cur.Password))
	fmt.Println("BMC takes the factory one:", srv.AccountPassword("admin", "factory-pw"))
	// Output:
	// result: Succeeded - password of "admin" changed
	// stage: Done
	// new password length: 16 pending left: false
	// BMC takes the new password: true
	// BMC takes the factory one: false
}
