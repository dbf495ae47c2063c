package otel_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	bmcotel "github.com/bmckit/bmckit/contrib/otel"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// Give the Runner the tracer's observer; each finished job becomes a trace
// with a span per task. Here the spans go to an in-memory exporter; use an
// OTLP exporter in a real program.
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tracing := bmcotel.New(bmcotel.Options{TracerProvider: tp})

	fleet := fake.NewFleet()
	const addr = "redfish://10.0.0.5/redfish/v1/Systems/1"
	if _, err := fleet.AddNew(addr, fake.Options{Power: bmc.PowerOn}); err != nil {
		panic(err)
	}
	runner, err := job.NewRunner(job.Config{
		Store: memstore.New(), StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			Observer:     tracing.JobObserver(),
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
	spec := job.Spec{BMC: addr, Tasks: []task.Spec{
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
		{Power: &task.PowerAction{Op: task.PowerCycle}},
	}}
	if _, err := runner.Submit(ctx, "netboot", spec); err != nil {
		panic(err)
	}
	if _, err := runner.Wait(ctx, "netboot"); err != nil {
		panic(err)
	}
	cancel()
	<-done

	spans := exp.GetSpans()
	sort.Slice(spans, func(a, b int) bool {
		if !spans[a].StartTime.Equal(spans[b].StartTime) {
			return spans[a].StartTime.Before(spans[b].StartTime)
		}
		return spans[a].Name < spans[b].Name
	})
	for _, s := range spans {
		fmt.Println(s.Name, s.Status.Code, "child:", s.Parent.IsValid())
	}
	// Output:
	// bmckit.job Ok child: false
	// bmckit.task bootDevice Ok child: true
	// bmckit.task power Ok child: true
}
