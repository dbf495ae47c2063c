package job_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// TestWorkersStopWithRunner: steps run on reused workers, and none is
// left when Start returns.
func TestWorkersStopWithRunner(t *testing.T) {
	fleet := fake.NewFleet()
	var urls []string
	for i := range 8 {
		u := fmt.Sprintf("redfish://10.7.0.%d/redfish/v1/Systems/1", i+1)
		if _, err := fleet.AddNew(u, fake.Options{Power: bmc.PowerOn}); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	r, err := job.NewRunner(job.Config{Store: memstore.New(), StepperConfig: job.StepperConfig{Dialer: fleet, PollInterval: time.Millisecond}, ScanInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	for i := range 40 {
		spec := job.Spec{BMC: urls[i%len(urls)], Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}}, {Power: &task.PowerAction{Op: task.PowerOn}},
		}}
		if _, err := r.Submit(ctx, fmt.Sprintf("w%d", i), spec); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		j, err := r.Wait(ctx, fmt.Sprintf("w%d", i))
		if err != nil || !j.Completed() || j.Status.Result != "Succeeded" {
			t.Fatalf("job w%d: %v %+v", i, err, j)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A worker may still be returning from its deferred wg.Done.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n := countGoroutines("sched.(*loop).worker")
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers left after Start returned", n)
		}
	}
}

func countGoroutines(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}
