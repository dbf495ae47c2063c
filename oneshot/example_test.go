package oneshot_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/oneshot"
	"github.com/bmckit/bmckit/task"
)

// Power on a server: the README's five-line start (the lines between the
// README markers are the README's, verbatim; TestREADMEStart checks), on a
// simulated Redfish BMC instead of a real one.
func Example() {
	srv := redfishtest.NewServer(redfishtest.Config{}) // a simulated BMC, plain HTTP
	defer srv.Close()
	ctx := context.Background()
	addr := srv.Address("1") // redfish+http://127.0.0.1:PORT/redfish/v1/Systems/1
	user, password := srv.Credentials().Username, srv.Credentials().Password

	// README:begin
	j, err := oneshot.Run(ctx, job.Spec{
		BMC:   addr, // e.g. "redfish://10.0.0.5/redfish/v1/Systems/1"
		Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}},
	}, oneshot.Options{Credentials: bmc.Credentials{Username: user, Password: password}})
	if err != nil {
		log.Fatal(err) // the job's reason and message, or why it could not run
	}
	fmt.Println(j.Status.Result, j.Status.Tasks[0].Message)
	// README:end

	// Output: Succeeded On
}

// A failed job is returned with a *ResultError that says why; the job
// itself is there too.
func ExampleResultError() {
	srv := redfishtest.NewServer(redfishtest.Config{})
	defer srv.Close()
	j, err := oneshot.Run(context.Background(), job.Spec{
		BMC:   srv.Address("1"),
		Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}},
	}, oneshot.Options{Credentials: bmc.Credentials{Username: srv.Credentials().Username, Password: "wrong"}})
	var re *oneshot.ResultError
	if errors.As(err, &re) {
		fmt.Println(re.Job.Status.Result, re.Job.Status.Reason)
	}
	fmt.Println(j.Status.Tasks[0].Result, strings.Contains(err.Error(), "task 1 (power off) failed"))
	// Output:
	// Failed Unauthorized
	// Failed true
}
