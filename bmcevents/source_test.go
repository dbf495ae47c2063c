package bmcevents_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

var sel = bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}

func dialFake(t *testing.T, opts fake.Options) (*fake.BMC, bmc.Driver) {
	t.Helper()
	b := fake.New(opts)
	drv, err := b.Dial(context.Background(), bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "127.0.0.1"}, bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	return b, drv
}

// cursorFails fails every write of a poll cursor: a crash between the
// entries' store and the cursor's.
type cursorFails struct{ storage.Store }

var errCrash = errors.New("crash")

func (s cursorFails) Create(ctx context.Context, k string, v []byte) (int64, error) {
	if strings.HasPrefix(k, bmcevents.CursorPrefix) {
		return 0, errCrash
	}
	return s.Store.Create(ctx, k, v)
}

func TestPollCrashBeforeCursor(t *testing.T) {
	ctx := context.Background()
	_, drv := dialFake(t, fake.Options{})
	lr := drv.(bmc.EventLogReader)
	mem := memstore.New()
	crashing, _ := bmcevents.NewSource(bmcevents.SourceConfig{Store: cursorFails{mem}})
	if _, err := crashing.Poll(ctx, lr, "bmc-1"); !errors.Is(err, errCrash) {
		t.Fatalf("Poll with the cursor write failing: %v", err)
	}
	src, _ := bmcevents.NewSource(bmcevents.SourceConfig{Store: mem})
	res, err := src.Poll(ctx, lr, "bmc-1")
	if err != nil || res.Stored != 0 || res.Duplicates != 4 {
		t.Fatalf("Poll after the crash: %+v, %v; want 0 stored, 4 duplicates", res, err)
	}
	res, err = src.Poll(ctx, lr, "bmc-1")
	if err != nil || res.Stored != 0 || res.Duplicates != 0 {
		t.Fatalf("Poll with the cursor: %+v, %v; want nothing", res, err)
	}
}

// TestPollClearedLog: a log cleared and refilled with the same IDs (SEL
// record IDs restart at 1) is a gap; the new entries are stored, none lost
// to an old entry's key.
func TestPollClearedLog(t *testing.T) {
	ctx := context.Background()
	b, drv := dialFake(t, fake.Options{})
	lr := drv.(bmc.EventLogReader)
	src, _ := bmcevents.NewSource(bmcevents.SourceConfig{Store: memstore.New(), Logs: []bmc.LogRef{sel}})
	if res, err := src.Poll(ctx, lr, "bmc-1"); err != nil || res.Stored != 3 {
		t.Fatalf("first Poll: %+v, %v", res, err)
	}
	if err := drv.(bmc.EventLogClearer).ClearLog(ctx, sel); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"after clear 1", "after clear 2"} {
		b.AddLogEntry(sel, bmc.LogEntry{Message: m, MessageID: "SEL.SystemEvent.0x01", Severity: bmc.SeverityCritical})
	}
	res, err := src.Poll(ctx, lr, "bmc-1")
	if err != nil || res.Stored != 2 || res.Duplicates != 0 || len(res.Gaps) != 1 {
		t.Fatalf("Poll after a clear: %+v, %v; want 2 stored and a gap", res, err)
	}
}

func TestPollBacklogNone(t *testing.T) {
	ctx := context.Background()
	b, drv := dialFake(t, fake.Options{})
	src, _ := bmcevents.NewSource(bmcevents.SourceConfig{Store: memstore.New(), Backlog: -1, Logs: []bmc.LogRef{sel}})
	if res, err := src.Poll(ctx, drv.(bmc.EventLogReader), "bmc-1"); err != nil || res.Stored != 0 {
		t.Fatalf("first Poll with Backlog -1: %+v, %v; want nothing stored", res, err)
	}
	b.AddLogEntry(sel, bmc.LogEntry{Message: "new"})
	if res, err := src.Poll(ctx, drv.(bmc.EventLogReader), "bmc-1"); err != nil || res.Stored != 1 {
		t.Fatalf("second Poll: %+v, %v; want the new entry", res, err)
	}
}

// TestRunFallsBackToPoll: without a Manager and without a stream, Run
// polls the fake's logs at every Interval of a fake clock; the Follower
// sees them as events.
func TestRunFallsBackToPoll(t *testing.T) {
	b, drv := dialFake(t, fake.Options{})
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memstore.New()
	src, _ := bmcevents.NewSource(bmcevents.SourceConfig{Store: store, Clock: clk, Interval: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	kinds := make(chan bmcevents.Kind, 4)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, drv, "bmc-1", func(k bmcevents.Kind) { kinds <- k }) }()
	if k := <-kinds; k != bmcevents.KindPoll {
		t.Fatalf("Run chose %s, want poll", k)
	}
	f := bmcevents.NewFollower(store)
	<-clk.WaiterAdded() // the first poll is done; Run waits for the interval
	evs, _, err := f.Next(ctx)
	if err != nil || len(evs) != 4 {
		t.Fatalf("after the first poll: %d events, %v; want 4", len(evs), err)
	}
	b.AddLogEntry(sel, bmc.LogEntry{Message: "PSU 1 lost", Severity: bmc.SeverityCritical})
	clk.Advance(time.Minute)
	<-clk.WaiterAdded()
	evs, _, err = f.Next(ctx)
	if err != nil || len(evs) != 1 || evs[0].Via != bmcevents.KindPoll || evs[0].Log != "system/SEL" {
		t.Fatalf("after the second poll: %+v, %v; want the new entry", evs, err)
	}
	if c := bmcevents.Critical(evs); len(c) != 1 || c[0].Condition().Reason != "Critical" {
		t.Errorf("Critical: %+v", c)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v", err)
	}
}

// TestRunPrefersPush: with a Manager, Run keeps a subscription.
func TestRunPrefersPush(t *testing.T) {
	b, drv := dialFake(t, fake.Options{})
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := bmcevents.NewManager(bmcevents.ManagerConfig{Owner: "bmckit:test", URL: "https://10.0.0.2/bmc-events", Secret: []byte("0123456789abcdef0123")})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := bmcevents.NewSource(bmcevents.SourceConfig{Store: memstore.New(), Clock: clk, Manager: m})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kinds := make(chan bmcevents.Kind, 4)
	go func() { _ = src.Run(ctx, drv, "bmc-1", func(k bmcevents.Kind) { kinds <- k }) }()
	if k := <-kinds; k != bmcevents.KindPush {
		t.Fatalf("Run chose %s, want push", k)
	}
	<-clk.WaiterAdded()
	if subs := b.Subscriptions(); len(subs) != 1 || subs[0].Context != "bmckit:test" {
		t.Fatalf("subscriptions after Run's first Ensure: %v", subs)
	}
	if n := len(b.TestEvents()); n != 1 {
		t.Errorf("test events asked for: %d, want 1", n)
	}
}
