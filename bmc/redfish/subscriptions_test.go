package redfish_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/storage/memstore"
)

var subSecret = []byte("redfish-subscription-test-secret")

// Subscriptions on every personality: create (the driver drops what the
// BMC refuses), list, a test event that reaches a real receiver, delete
// (twice: idempotent).
func TestEventSubscriptions(t *testing.T) {
	for _, style := range []redfishtest.SubscriptionStyle{redfishtest.SubscriptionsDMTF, redfishtest.SubscriptionsILO5, redfishtest.SubscriptionsOpenBMC} {
		t.Run(string(style), func(t *testing.T) {
			ctx := t.Context()
			store := memstore.New()
			rcv, err := bmcevents.NewReceiver(bmcevents.Config{Store: store, Secret: subSecret})
			if err != nil {
				t.Fatal(err)
			}
			rs := httptest.NewServer(rcv)
			defer rs.Close()
			srv, drv := dialSim(t, redfishtest.Config{Subscriptions: style}, testOptions(), "1", false)
			dest, _ := bmcevents.Destination(rs.URL+"/bmc-events", subSecret, "node-1")
			subs, err := drv.EventSubscriptions(ctx)
			if err != nil || len(subs) != 0 {
				t.Fatalf("%v %v", subs, err)
			}
			created, err := drv.Subscribe(ctx, bmc.EventSubscriptionSpec{Destination: dest, Context: "bmckit:test",
				RegistryPrefixes: []string{"Base", "ResourceEvent", "OpenBMC"}, RetryForever: true})
			if err != nil {
				t.Fatal(err)
			}
			held := srv.Subscriptions()
			if len(held) != 1 || held[0].ID != created.ID || held[0].Destination != dest || held[0].Context != "bmckit:test" {
				t.Fatalf("BMC holds %+v, driver says %+v", held, created)
			}
			if style == redfishtest.SubscriptionsILO5 && (len(held[0].EventTypes) == 0 || held[0].RegistryPrefixes != nil) {
				t.Fatalf("iLO 5 subscription %+v: want EventTypes and no RegistryPrefixes", held[0])
			}
			subs, err = drv.EventSubscriptions(ctx)
			if err != nil || len(subs) != 1 || subs[0].ID != created.ID || subs[0].Destination != dest || subs[0].Context != "bmckit:test" || subs[0].Protocol != "Redfish" {
				t.Fatalf("%+v %v", subs, err)
			}
			if strings.Contains(subs[0].String(), dest) {
				t.Fatal("String() shows the destination")
			}
			if err := drv.SubmitTestEvent(ctx, bmc.TestEvent{MessageID: "Base.1.0.TestMessage", Message: "hello"}); err != nil {
				t.Fatal(err)
			}
			fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := srv.FlushEvents(fctx); err != nil {
				t.Fatal(err)
			}
			evs, _, err := bmcevents.NewFollower(store).Next(ctx)
			if err != nil || len(evs) != 1 || evs[0].Source != "node-1" || evs[0].Message != "hello" {
				t.Fatalf("receiver got %+v %v; deliveries %+v", evs, err, srv.Deliveries())
			}
			if err := drv.Unsubscribe(ctx, created.ID); err != nil {
				t.Fatal(err)
			}
			if err := drv.Unsubscribe(ctx, created.ID); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			if n := len(srv.Subscriptions()); n != 0 {
				t.Fatalf("%d left", n)
			}
		})
	}
}

// OpenBMC holds 20 subscriptions: the 21st is bmc.ErrSubscriptionLimit.
// A BMC without subscriptions is bmc.ErrNotSupported. Errors never carry
// the destination.
func TestEventSubscriptionLimitsAndErrors(t *testing.T) {
	ctx := t.Context()
	_, drv := dialSim(t, redfishtest.Config{Subscriptions: redfishtest.SubscriptionsOpenBMC}, testOptions(), "1", false)
	dest := "http://127.0.0.1:9/bmc-events/n/secret-token-123456789"
	for range 20 {
		if _, err := drv.Subscribe(ctx, bmc.EventSubscriptionSpec{Destination: dest, Context: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := drv.Subscribe(ctx, bmc.EventSubscriptionSpec{Destination: dest, Context: "c"})
	if !errors.Is(err, bmc.ErrSubscriptionLimit) || strings.Contains(err.Error(), "secret-token") {
		t.Fatalf("21st: %v", err)
	}
	if _, err := drv.Subscribe(ctx, bmc.EventSubscriptionSpec{Destination: "ftp://x/secret-token-123456789", Context: "c"}); err == nil || strings.Contains(err.Error(), "secret-token") || bmc.IsTransient(err) {
		t.Fatalf("bad destination: %v", err)
	}
	_, none := dialSim(t, redfishtest.Config{}, testOptions(), "1", false)
	if _, err := none.EventSubscriptions(ctx); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("no EventService: %v", err)
	}
	if err := none.SubmitTestEvent(ctx, bmc.TestEvent{}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("no EventService: %v", err)
	}
	_, sse := dialSim(t, redfishtest.Config{EventStream: true}, testOptions(), "1", false)
	if _, err := sse.Subscribe(ctx, bmc.EventSubscriptionSpec{Destination: dest, Context: "c"}); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("SSE only: %v", err)
	}
}

// The simulator retries a push that gets no 2xx with the same EventId,
// like a BMC; the receiver stores the event once.
func TestSimulatorRetriesPushes(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	rcv, _ := bmcevents.NewReceiver(bmcevents.Config{Store: store, Secret: subSecret})
	fail := make(chan struct{}, 2)
	fail <- struct{}{}
	fail <- struct{}{}
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-fail:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			rcv.ServeHTTP(w, r)
		}
	}))
	defer rs.Close()
	srv, drv := dialSim(t, redfishtest.Config{Subscriptions: redfishtest.SubscriptionsDMTF, EventRetryInterval: time.Millisecond}, testOptions(), "1", false)
	dest, _ := bmcevents.Destination(rs.URL, subSecret, "n")
	if _, err := drv.Subscribe(ctx, bmc.EventSubscriptionSpec{Destination: dest, Context: "c"}); err != nil {
		t.Fatal(err)
	}
	id := srv.EmitEvent(redfishtest.Event{Severity: "Critical", Message: "PSU failed"})
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := srv.FlushEvents(fctx); err != nil {
		t.Fatal(err)
	}
	ds := srv.Deliveries()
	if len(ds) != 3 || ds[2].Status != 200 || ds[0].EventID != id || ds[2].EventID != id {
		t.Fatalf("deliveries %+v", ds)
	}
	evs, _, _ := bmcevents.NewFollower(store).Next(ctx)
	if len(evs) != 1 || !evs[0].Critical() || evs[0].System != "1" {
		t.Fatalf("%+v", evs)
	}
}
