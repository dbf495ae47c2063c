package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// Read a job straight from the Store, as a dashboard sharing the Runner's
// database would: the record is the plain JSON of the job (encoding/json
// reads it too); DecodeRecord also reads records of earlier versions, which
// left some task conditions out.
func ExampleDecodeRecord() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := fake.NewFleet()
	_, _ = fleet.AddNew("redfish://10.0.0.7/redfish/v1/Systems/1", fake.Options{Power: bmc.PowerOff})
	store := memstore.New()
	runner, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fleet}})
	if err != nil {
		panic(err)
	}
	go func() { _ = runner.Start(ctx) }()
	if _, err := runner.Submit(ctx, "on-7", job.Spec{
		BMC:   "redfish://10.0.0.7/redfish/v1/Systems/1",
		Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}},
	}); err != nil {
		panic(err)
	}
	if _, err := runner.Wait(ctx, "on-7"); err != nil {
		panic(err)
	}

	rec, err := store.Get(ctx, "bmckit/jobs/on-7") // Config.KeyPrefix + "jobs/" + name
	if err != nil {
		panic(err)
	}
	fmt.Println("task conditions in the record:", strings.Count(string(rec.Value), `"type":"Completed"`)-1)
	var plain job.Job
	if err := json.Unmarshal(rec.Value, &plain); err != nil {
		panic(err)
	}
	fmt.Println("encoding/json:", plain.Status.Result)
	j, err := job.DecodeRecord(rec.Value)
	if err != nil {
		panic(err)
	}
	ts := j.Status.Tasks[0]
	c := conditions.Get(ts.Conditions, conditions.TypeCompleted)
	fmt.Printf("task 1: %s, Completed=%s (%s: %s)\n", ts.Result, c.Status, c.Reason, c.Message)
	// Output:
	// task conditions in the record: 1
	// encoding/json: Succeeded
	// task 1: Succeeded, Completed=True (Succeeded: On)
}
