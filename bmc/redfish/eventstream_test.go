package redfish_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// TestStreamEventsNotSupported: a BMC without ServerSentEventUri answers
// bmc.ErrNotSupported (permanent) at once, and a second call sends no
// request.
func TestStreamEventsNotSupported(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{Subscriptions: redfishtest.SubscriptionsDMTF}, testOptions(), "", false)
	ctx := context.Background()
	err := drv.StreamEvents(ctx, func([]byte) error { t.Fatal("an event from no stream"); return nil })
	if !errors.Is(err, bmc.ErrNotSupported) || bmc.IsTransient(err) {
		t.Fatalf("StreamEvents: %v; want a permanent bmc.ErrNotSupported", err)
	}
	before := len(srv.Requests())
	if err := drv.StreamEvents(ctx, func([]byte) error { return nil }); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatalf("StreamEvents again: %v", err)
	}
	if n := len(srv.Requests()) - before; n != 0 {
		t.Errorf("the second StreamEvents sent %d requests, want 0", n)
	}
}

// TestStreamEventsWholeEvents: an emitted event reaches fn whole; the
// stream ends with fn's error, and with Close.
func TestStreamEventsWholeEvents(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{EventStream: true}, testOptions(), "", false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan string) // unbuffered: fn returns only after the test took the event
	stop := errors.New("stop")
	done := make(chan error, 1)
	go func() {
		done <- drv.StreamEvents(ctx, func(d []byte) error { got <- string(d); return stop })
	}()
	var data string
	for data == "" { // emit until the open stream carries one
		srv.EmitEvent(redfishtest.Event{EventID: "e", Message: "hello", Severity: "Critical"})
		select {
		case data = <-got:
		case err := <-done:
			t.Fatalf("StreamEvents ended: %v", err)
		case <-time.After(20 * time.Millisecond): // emitted before the stream opened
		}
	}
	if !containsAll(data, `"EventId":"e"`, `"Message":"hello"`, `"MessageSeverity":"Critical"`) {
		t.Errorf("event data %s lacks the record", data)
	}
	if err := <-done; !errors.Is(err, stop) {
		t.Errorf("StreamEvents after fn's error: %v", err)
	}
	opened := make(chan struct{}, 1)
	go func() {
		done <- drv.StreamEvents(ctx, func([]byte) error {
			select {
			case opened <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	for open := false; !open; {
		srv.EmitEvent(redfishtest.Event{Message: "second stream"})
		select {
		case <-opened:
			open = true
		case err := <-done:
			t.Fatalf("StreamEvents ended before Close: %v", err)
		case <-time.After(20 * time.Millisecond): // emitted before the stream opened
		}
	}
	_ = drv.Close(ctx)
	if err := <-done; err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("StreamEvents after Close: %v; want the session's end", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
