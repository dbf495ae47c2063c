package bmcevents_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmcevents"
)

// subsBMC is a driver with subscriptions only: a limit, a log of calls.
type subsBMC struct {
	bmc.Driver
	mu     sync.Mutex
	subs   []bmc.EventSubscription
	next   int
	limit  int
	calls  []string
	noTest bool
}

func (b *subsBMC) EventSubscriptions(context.Context) ([]bmc.EventSubscription, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "list")
	return append([]bmc.EventSubscription(nil), b.subs...), nil
}

func (b *subsBMC) Subscribe(_ context.Context, spec bmc.EventSubscriptionSpec) (bmc.EventSubscription, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "create")
	if b.limit > 0 && len(b.subs) >= b.limit {
		return bmc.EventSubscription{}, bmc.Transient(bmc.ErrSubscriptionLimit)
	}
	b.next++
	s := bmc.EventSubscription{ID: fmt.Sprint(b.next), Destination: spec.Destination, Context: spec.Context, Protocol: "Redfish"}
	b.subs = append(b.subs, s)
	return s, nil
}

func (b *subsBMC) Unsubscribe(_ context.Context, id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "delete "+id)
	b.subs = slices.DeleteFunc(b.subs, func(s bmc.EventSubscription) bool { return s.ID == id })
	return nil
}

func (b *subsBMC) SubmitTestEvent(context.Context, bmc.TestEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "test")
	if b.noTest {
		return fmt.Errorf("no action: %w", bmc.ErrNotSupported)
	}
	return nil
}

func (b *subsBMC) takeCalls() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := strings.Join(b.calls, ",")
	b.calls = nil
	return c
}

// fakeDriver is a driver without bmc.EventSubscriber: the fake's
// bmc.Driver methods only.
func fakeDriver(t *testing.T) bmc.Driver {
	t.Helper()
	d, err := fake.New(fake.Options{}).Dial(context.Background(), bmc.Endpoint{}, bmc.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	return struct{ bmc.Driver }{d}
}

func newTestManager(t *testing.T) *bmcevents.Manager {
	t.Helper()
	m, err := bmcevents.NewManager(bmcevents.ManagerConfig{Owner: "bmckit:a", URL: base, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEnsure(t *testing.T) {
	ctx := context.Background()
	m := newTestManager(t)
	b := &subsBMC{Driver: fakeDriver(t), limit: 4, next: 100}
	dest := dest(t, "n1")
	oldDest, _ := bmcevents.Destination("http://127.0.0.1:9/old", testSecret, "n1")
	b.subs = []bmc.EventSubscription{
		{ID: "7", Context: "someone-else", Destination: dest},
		{ID: "8", Context: "bmckit:a", Destination: oldDest},
		{ID: "9", Context: "bmckit:a", Destination: strings.ToUpper(dest[:4]) + dest[4:]},
		{ID: "10", Context: "bmckit:a", Destination: dest},
	}
	res, err := m.Ensure(ctx, b, "n1")
	if err != nil || res.ID != "9" || res.Created || res.Deleted != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if c := b.takeCalls(); c != "list,delete 8,delete 10" {
		t.Fatalf("calls %s", c)
	}
	// All well: one GET.
	if res, err := m.Ensure(ctx, b, "n1"); err != nil || res.Created || res.Deleted != 0 || b.takeCalls() != "list" {
		t.Fatalf("%+v %v", res, err)
	}
	// The BMC dropped it: created again, with a test event.
	b.subs = b.subs[:1]
	if res, err := m.Ensure(ctx, b, "n1"); err != nil || !res.Created || !res.TestEventSent || b.takeCalls() != "list,create,test" {
		t.Fatalf("%+v %v", res, err)
	}
	// At the limit with a stale one of ours: the stale one goes first.
	b.subs = []bmc.EventSubscription{{ID: "1", Context: "x"}, {ID: "2", Context: "x"}, {ID: "3", Context: "x"}, {ID: "4", Context: "bmckit:a", Destination: oldDest}}
	b.noTest = true
	res, err = m.Ensure(ctx, b, "n1")
	if err != nil || !res.Created || res.TestEventSent || res.Deleted != 1 || b.takeCalls() != "list,create,delete 4,create,test" {
		t.Fatalf("%+v %v", res, err)
	}
	// Release deletes ours only.
	if n, err := m.Release(ctx, b); err != nil || n != 1 || len(b.subs) != 3 {
		t.Fatalf("%d %v %+v", n, err, b.subs)
	}
	// A driver without subscriptions.
	if _, err := m.Ensure(ctx, fakeDriver(t), "n1"); !errors.Is(err, bmc.ErrNotSupported) {
		t.Fatal(err)
	}
	// Errors and results never carry the destination.
	b.limit = 1
	b.subs = []bmc.EventSubscription{{ID: "1", Context: "x"}}
	_, err = m.Ensure(ctx, b, "n1")
	tok := dest[strings.LastIndexByte(dest, '/')+1:]
	if !errors.Is(err, bmc.ErrSubscriptionLimit) || strings.Contains(err.Error(), tok) {
		t.Fatal(err)
	}
}

func TestNewManagerChecks(t *testing.T) {
	for _, cfg := range []bmcevents.ManagerConfig{
		{URL: base, Secret: testSecret},
		{Owner: "a\nb", URL: base, Secret: testSecret},
		{Owner: "a", URL: "ftp://x", Secret: testSecret},
		{Owner: "a", URL: base, Secret: []byte("short")},
	} {
		if _, err := bmcevents.NewManager(cfg); err == nil {
			t.Fatalf("%+v accepted", cfg.Owner)
		}
	}
}
