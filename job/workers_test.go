package job

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// TestRetireIdle: the loop stops exactly the workers idle for
// idleWorkerTimeout, oldest first, and keeps the others in order.
func TestRetireIdle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var l loop
	var ws []*stepWorker
	for i, age := range []time.Duration{5 * time.Second, idleWorkerTimeout, idleWorkerTimeout - 1, 0} {
		w := &stepWorker{work: make(chan stepWork, 1), since: t0.Add(-age)}
		w.work <- stepWork{h: &heldSystem{sys: fmt.Sprint(i)}} // marker: replaced by a zero stepWork if retired
		<-w.work
		ws = append(ws, w)
		l.idle = append(l.idle, w)
	}
	l.retireIdle(t0)
	if len(l.idle) != 2 || l.idle[0] != ws[2] || l.idle[1] != ws[3] {
		t.Fatalf("idle after retiring: %v, want the last two workers", l.idle)
	}
	for i, w := range ws {
		select {
		case sw := <-w.work:
			if i >= 2 || sw.h != nil {
				t.Fatalf("worker %d got %+v", i, sw)
			}
		default:
			if i < 2 {
				t.Fatalf("worker %d idle for %v was not retired", i, t0.Sub(w.since))
			}
		}
	}
}

// TestRetireIdleBeyondMax: more than maxIdleWorkers idle workers, however
// fresh, are cut down to maxIdleWorkers, the longest idle first.
func TestRetireIdleBeyondMax(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var l loop
	var ws []*stepWorker
	for i := range maxIdleWorkers + 10 {
		w := &stepWorker{work: make(chan stepWork, 1), since: t0.Add(time.Duration(i))}
		ws = append(ws, w)
		l.idle = append(l.idle, w)
	}
	l.retireIdle(t0.Add(time.Second))
	if len(l.idle) != maxIdleWorkers || l.idle[0] != ws[10] {
		t.Fatalf("%d idle left, first %p; want %d from %p", len(l.idle), l.idle[0], maxIdleWorkers, ws[10])
	}
	for i, w := range ws {
		if got := len(w.work); (got == 1) != (i < 10) {
			t.Fatalf("worker %d: %d quit messages", i, got)
		}
	}
}

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
	r, err := NewRunner(Config{Store: memstore.New(), StepperConfig: StepperConfig{Dialer: fleet, PollInterval: time.Millisecond}, ScanInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	for i := range 40 {
		spec := Spec{BMC: urls[i%len(urls)], Tasks: []task.Spec{
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
		n := countGoroutines("job.(*loop).worker")
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
