package ipmi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// One request budget per endpoint, in the Dialer: two sessions to one BMC
// share it, another BMC has its own, and a request with no turn left fails
// with its ctx's error without going out.
func TestRequestBudgetPerEndpoint(t *testing.T) {
	t.Parallel()
	simA := ipmitest.NewServer(t, ipmitest.Options{})
	simB := ipmitest.NewServer(t, ipmitest.Options{})
	// No refill during the test: the burst is all there is. The short
	// Timeout bounds the logouts at cleanup, which find the budget spent.
	d := dialer(t, ipmi.Options{RequestsPerSecond: 0.001, RequestBurst: 6, Timeout: 200 * time.Millisecond})
	ctx := context.Background()

	a, err := d.Open(ctx, simA.Endpoint, simA.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	if _, err := a.PowerState(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Requests != 5 || st.Throttled != 0 {
		t.Fatalf("stats after the handshake and one command: %+v, want 5 requests (4 + 1), none throttled", st)
	}

	// A second session to A gets the budget's last token for Open
	// Session, then waits for RAKP 1 until its ctx ends.
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	a2, err := d.Open(wctx, simA.Endpoint, simA.Credentials)
	cancel()
	if err == nil {
		_ = a2.Close(ctx)
		t.Fatal("a second session opened through the first one's spent budget")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "request budget") {
		t.Fatalf("second session to A: %v; want the ctx's DeadlineExceeded, waiting for the request budget", err)
	}
	wctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = a.PowerState(wctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("command beyond A's budget: %v; want the ctx's DeadlineExceeded", err)
	}
	if st := a.Stats(); st.Requests != 5 || st.Throttled != 1 || st.ThrottleWait <= 0 || st.ThrottleWait > 5*time.Second {
		t.Errorf("stats after a command that found no turn: %+v, want still 5 requests and 1 throttled until its ctx ended (50ms)", st)
	}

	// B, same dialer: a full budget of its own.
	b, err := d.Open(ctx, simB.Endpoint, simB.Credentials)
	if err != nil {
		t.Fatalf("open B while A's budget is spent: %v", err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	for range 2 {
		if _, err := b.PowerState(ctx); err != nil {
			t.Fatalf("B while A's budget is spent: %v", err)
		}
	}
	if st := b.Stats(); st.Throttled != 0 {
		t.Errorf("B stats %+v: want none throttled", st)
	}
}

// A negative RequestsPerSecond means no budget; a negative burst is refused.
func TestRequestBudgetOptions(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	drv, err := dialer(t, ipmi.Options{RequestsPerSecond: -1}).Open(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	for range 50 {
		if _, err := drv.PowerState(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st := drv.Stats(); st.Throttled != 0 {
		t.Errorf("stats %+v: want no throttled request without a budget", st)
	}
	if _, err := ipmi.NewDialer(ipmi.Options{RequestBurst: -1}); err == nil || !strings.Contains(err.Error(), "RequestBurst") {
		t.Errorf("NewDialer with RequestBurst -1: %v, want an error naming RequestBurst", err)
	}
}
