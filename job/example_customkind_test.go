package job_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// requirePower is a task kind the program adds (docs/custom-kinds.md): a
// precondition that the server's power is params.want, read through the
// job's BMC connection. It sends nothing; Check is the whole task.
type requirePower struct{}

func (requirePower) Validate(params json.RawMessage) error {
	var p struct{ Want bmc.PowerState }
	if err := json.Unmarshal(params, &p); err != nil {
		return &task.FieldError{Msg: err.Error()}
	}
	if p.Want != bmc.PowerOn && p.Want != bmc.PowerOff {
		return &task.FieldError{Path: "want", Msg: fmt.Sprintf("%q is not On or Off", p.Want)}
	}
	return nil
}

func (requirePower) Send(context.Context, *job.KindTask) error { return nil }

func (requirePower) Check(ctx context.Context, t *job.KindTask) (bool, string, error) {
	var p struct{ Want bmc.PowerState }
	_ = json.Unmarshal(t.Params, &p)
	st, err := t.BMC.PowerState(ctx)
	if err != nil {
		return false, "", err
	}
	if st != p.Want {
		return false, "", job.Fail("PreconditionFailed", fmt.Sprintf("power is %s, the job requires %s", st, p.Want))
	}
	return true, "power is " + string(st), nil
}

// Add a task kind: one type (above) and one line of configuration (Kinds).
func ExampleKind() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := fake.NewFleet()
	_, _ = fleet.AddNew("ipmi://10.0.0.7", fake.Options{Power: bmc.PowerOff})

	runner, err := job.NewRunner(job.Config{Store: memstore.New(), StepperConfig: job.StepperConfig{
		Dialer: fleet,
		Kinds:  job.Kinds{"example.com/require-power": requirePower{}},
	}})
	if err != nil {
		panic(err)
	}
	go func() { _ = runner.Start(ctx) }()

	spec, err := job.DecodeSpec([]byte(`{"bmc": "ipmi://10.0.0.7", "tasks": [
		{"custom": {"kind": "example.com/require-power", "params": {"want": "Off"}}},
		{"bootDevice": {"device": "pxe"}},
		{"power": {"op": "on"}}]}`))
	if err != nil {
		panic(err)
	}
	if _, err := runner.Submit(ctx, "reprovision", spec); err != nil {
		panic(err)
	}
	j, _ := runner.Wait(ctx, "reprovision")
	fmt.Println(j.Status.Result, "-", j.Status.Tasks[0].Message)

	// Run again: the server is on now, and the precondition fails the job.
	_, _ = runner.Submit(ctx, "reprovision-2", spec)
	j, _ = runner.Wait(ctx, "reprovision-2")
	fmt.Println(j.Status.Result, "-", j.Status.Tasks[0].Reason+":", j.Status.Tasks[0].Message)

	// Params the kind refuses are refused before anything is stored.
	spec.Tasks[0].Custom.Params = task.CustomParams(`{"want": "on"}`)
	_, err = runner.Submit(ctx, "reprovision-3", spec)
	fmt.Println(err)
	// Output:
	// Succeeded - power is Off
	// Failed - PreconditionFailed: power is On, the job requires Off
	// job "reprovision-3": invalid job spec: tasks[0].custom.params.want: "on" is not On or Off
}
