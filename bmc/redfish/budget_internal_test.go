package redfish

import (
	"context"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

func TestRequestBudgetDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.RequestsPerSecond != DefaultRequestsPerSecond || o.RequestBurst != 25 {
		t.Errorf("defaults: %v/s burst %d, want %v/s burst 25", o.RequestsPerSecond, o.RequestBurst, DefaultRequestsPerSecond)
	}
	if o := (Options{RequestsPerSecond: 10}).withDefaults(); o.RequestBurst != 10 {
		t.Errorf("10/s: default burst %d, want 10 (no more than the rate)", o.RequestBurst)
	}
	if o := (Options{RequestsPerSecond: -1}).withDefaults(); o.RequestsPerSecond >= 0 || !unlimited(NewDialer(o)) {
		t.Errorf("RequestsPerSecond -1 resolved to %v: want unlimited", o.RequestsPerSecond)
	}
}

// The Dialer keeps one budget per endpoint while a session to it is open,
// and drops it when the last one closed or failed to dial.
func TestRequestBudgetLifetime(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 2})
	t.Cleanup(srv.Close)
	d := NewDialer(Options{RequestsPerSecond: 1000})
	ctx := context.Background()
	a, err := d.DialDriver(ctx, srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.DialDriver(ctx, srv.Endpoint("2"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	opened, err := a.OpenSystem(ctx, srv.Endpoint("2"))
	if err != nil {
		t.Fatal(err)
	}
	if a.s.wire.budget == nil || a.s.wire.budget != b.s.wire.budget || d.budgets.Len() != 1 {
		t.Fatalf("two sessions to one endpoint: budgets %p and %p, %d in the dialer; want one shared", a.s.wire.budget, b.s.wire.budget, d.budgets.Len())
	}
	if _, err := d.DialDriver(ctx, srv.Endpoint("1"), bmc.Credentials{Username: "admin", Password: "wrong"}); err == nil {
		t.Fatal("dial with a wrong password succeeded")
	}
	_ = opened.Close(ctx) // shares a's session: releases nothing
	_ = a.Close(ctx)
	if n := d.budgets.Len(); n != 1 {
		t.Fatalf("after closing one of two sessions the dialer holds %d budgets, want 1", n)
	}
	_ = b.Close(ctx)
	if n := d.budgets.Len(); n != 0 {
		t.Fatalf("after closing every session (and a failed dial) the dialer holds %d budgets, want 0", n)
	}
}

// unlimited reports whether d's sessions get no request budget.
func unlimited(d *Dialer) bool {
	bg, release := d.budgets.Acquire("host:443")
	release()
	return bg == nil
}
