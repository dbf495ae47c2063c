package rollout_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// A power cycle of eight servers, two at a time, one rack at a time, a
// canary of one first.
func ExampleController() {
	ctx := context.Background()
	fleet := fake.NewFleet()
	var servers []rollout.Server
	for i := range 8 {
		addr := fmt.Sprintf("redfish://10.0.0.%d/redfish/v1/Systems/1", i+1)
		_, _ = fleet.AddNew(addr, fake.Options{Power: bmc.PowerOn})
		servers = append(servers, rollout.Server{
			Name: fmt.Sprintf("node-%d", i), BMC: addr,
			Labels: map[string]string{"rack": fmt.Sprintf("r%d", i%4)},
		})
	}
	store := memstore.New()
	runner, _ := job.NewRunner(job.Config{StepperConfig: job.StepperConfig{Dialer: fleet}, Store: store})
	ctl, _ := rollout.New(rollout.Config{Runner: runner, Store: store})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = runner.Start(runCtx) }()
	go func() { _ = ctl.Start(runCtx) }()

	_, err := ctl.Create(ctx, "cycle", rollout.Spec{
		Template: job.Spec{Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerCycle}}}},
		Servers:  servers,
		Policy: rollout.Policy{
			MaxUnavailable:         rollout.Count(2),
			MaxUnavailablePerGroup: []rollout.GroupLimit{{Label: "rack", Max: rollout.Count(1)}},
			Canary:                 1,
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r, err := ctl.Wait(wctx, "cycle")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Status.Result, r.Status.Message)
	fmt.Printf("%+v\n", r.Status.Counts)
	fmt.Println("canary:", r.Status.Canary.Result)
	// Output:
	// Succeeded 8 servers succeeded, 0 skipped
	// {Pending:0 Held:0 Running:0 Succeeded:8 Failed:0 Skipped:0}
	// canary: Succeeded
}
