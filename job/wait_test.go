package job

import (
	"context"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// TestWaitLeavesNoWaiter: Wait on a completed job, and a Wait whose context
// ends, leave nothing in the runner's waiter table (it grew by one entry
// per such Wait), while a pending Wait is still woken by signal.
func TestWaitLeavesNoWaiter(t *testing.T) {
	store := memstore.New()
	r, err := NewRunner(Config{Store: store, StepperConfig: StepperConfig{
		Clock: clock.Real{},
		Dialer: bmc.DialerFunc(func(context.Context, bmc.Endpoint, bmc.Credentials) (bmc.Driver, error) {
			t.Fatal("no BMC call expected")
			return nil, nil
		}),
	}, ScanInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	done := &Job{Name: "done", Status: Status{Result: conditions.ResultSucceeded, Conditions: []conditions.Condition{
		{Type: conditions.TypeCompleted, Status: conditions.True, LastTransitionTime: timestamp.New(time.Unix(1, 0).UTC()), Reason: "Succeeded"},
	}}}
	data, err := marshalRecord(done)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, r.jobKey("done"), data); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if j, err := r.Wait(ctx, "done"); err != nil || !j.Completed() {
			t.Fatalf("Wait(done) = %v, %v", j, err)
		}
	}
	if _, err := r.Wait(ctx, "missing"); err == nil {
		t.Fatal("Wait on a missing job returned no error")
	}
	if _, err := r.Submit(ctx, "pending", Spec{BMC: "ipmi://10.0.0.1", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Wait(cctx, "pending"); err == nil {
		t.Fatal("Wait with a canceled context returned no error")
	}
	r.mu.Lock()
	n := len(r.waiters)
	r.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d waiter entries left after Waits that returned", n)
	}

	// A pending Wait is woken by signal (it then re-reads the job).
	woke := make(chan struct{})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		defer close(woke)
		_, _ = r.Wait(wctx, "pending")
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.mu.Lock()
		w := r.waiters["pending"]
		r.mu.Unlock()
		if w != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Wait did not register")
		}
		time.Sleep(time.Millisecond)
	}
	// Complete the job in the store, then signal as the persister does.
	rec, err := store.Get(ctx, r.jobKey("pending"))
	if err != nil {
		t.Fatal(err)
	}
	done.Name = "pending"
	data, _ = marshalRecord(done)
	if _, err := store.Update(ctx, r.jobKey("pending"), data, rec.Revision); err != nil {
		t.Fatal(err)
	}
	r.signal("pending")
	select {
	case <-woke:
	case <-time.After(10 * time.Second):
		t.Fatal("signal did not wake the Wait")
	}
	r.mu.Lock()
	n = len(r.waiters)
	r.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d waiter entries left", n)
	}
}
