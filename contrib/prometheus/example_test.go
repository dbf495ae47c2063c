package prometheus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	bmcprom "github.com/bmckit/bmckit/contrib/prometheus"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// Register the metrics, give the Runner their observer, and serve the
// registry with promhttp.HandlerFor(reg, promhttp.HandlerOpts{}) on your
// /metrics endpoint. Here the registry is read directly.
func Example() {
	reg := prometheus.NewRegistry()
	metrics := bmcprom.New(bmcprom.Options{})
	reg.MustRegister(metrics)

	fleet := fake.NewFleet()
	const addr = "redfish://10.0.0.5/redfish/v1/Systems/1"
	if _, err := fleet.AddNew(addr, fake.Options{Power: bmc.PowerOff}); err != nil {
		panic(err)
	}
	runner, err := job.NewRunner(job.Config{
		Store: memstore.New(), StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			Observer:     metrics.JobObserver(),
			PollInterval: time.Millisecond,
		},
		ScanInterval: 10 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Start(ctx) }()
	if _, err := runner.Submit(ctx, "power-on", job.Spec{BMC: addr, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}}); err != nil {
		panic(err)
	}
	if _, err := runner.Wait(ctx, "power-on"); err != nil {
		panic(err)
	}
	cancel()
	<-done

	fams, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range fams {
		switch f.GetName() {
		case "bmckit_jobs_finished_total":
			for _, m := range f.GetMetric() {
				fmt.Println(f.GetName(), labels(m.GetLabel()), m.GetCounter().GetValue())
			}
		case "bmckit_task_duration_seconds":
			for _, m := range f.GetMetric() {
				fmt.Println(f.GetName()+"_count", labels(m.GetLabel()), m.GetHistogram().GetSampleCount())
			}
		}
	}
	// Output:
	// bmckit_jobs_finished_total driver=redfish reason=Succeeded result=Succeeded 1
	// bmckit_task_duration_seconds_count kind=power result=Succeeded 1
}

func labels[L interface {
	GetName() string
	GetValue() string
}](ls []L) string {
	s := ""
	for i, l := range ls {
		if i > 0 {
			s += " "
		}
		s += l.GetName() + "=" + l.GetValue()
	}
	return s
}
