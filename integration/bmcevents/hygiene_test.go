//go:build linux

package bmcevents_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

const (
	envHygieneBMCs = "BMCKIT_BMCEVENTS_BMCS" // source=address,...
	envHygieneURL  = "BMCKIT_BMCEVENTS_URL"
	hygieneOwner   = "bmckit:hygiene-test"
)

var hygieneSecret = []byte("bmcevents-hygiene-test-secret-01")

// TestSubscriptionHygiene runs the host's subscription pass (Ensure on 50
// simulated BMCs, 10 at a time) in a child process that is SIGKILLed at a
// different point each time, 10 times, then once to the end. The BMCs
// start with leaked subscriptions of the same owner (one pointing at an
// old destination, one a duplicate) and one of another owner. Afterwards
// every BMC holds exactly one subscription of the owner, pointing at its
// destination, and the other owner's is untouched. Then 10 BMCs drop their
// subscriptions (as after a reset) and one pass gives each one back, test
// events arrive at the receiver, and Release leaves none of the owner's.
func TestSubscriptionHygiene(t *testing.T) {
	if childtest.IsChild("bmcevents-host") {
		hostPass(os.Getenv(envHygieneBMCs), os.Getenv(envHygieneURL))
		return
	}
	if testing.Short() {
		t.Skip("11 child processes against 50 simulated BMCs")
	}
	ctx := t.Context()
	store := memstore.New()
	rcv, err := bmcevents.NewReceiver(bmcevents.Config{Store: store, Secret: hygieneSecret})
	if err != nil {
		t.Fatal(err)
	}
	base := serveLoopback(t, rcv) + "/bmc-events"
	// Somebody else's receiver, which takes everything.
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer other.Close()

	const n = 50
	styles := []redfishtest.SubscriptionStyle{redfishtest.SubscriptionsDMTF, redfishtest.SubscriptionsILO5, redfishtest.SubscriptionsOpenBMC}
	srvs := make([]*redfishtest.Server, n)
	var list []string
	dialer := redfish.NewDialer(redfish.Options{RequestTimeout: 10 * time.Second, RequestsPerSecond: -1})
	for i := range srvs {
		srvs[i] = redfishtest.NewServer(redfishtest.Config{Subscriptions: styles[i%3]})
		defer srvs[i].Close()
		src := fmt.Sprintf("bmc-%02d", i)
		list = append(list, src+"="+srvs[i].Address("1"))
		// Leaks: an old destination and a duplicate of the owner, and a
		// subscription of somebody else.
		drv, err := dialer.DialDriver(ctx, srvs[i].Endpoint("1"), srvs[i].Credentials())
		if err != nil {
			t.Fatal(err)
		}
		dest, _ := bmcevents.Destination(base, hygieneSecret, src)
		old, _ := bmcevents.Destination("http://127.0.0.1:1/old", hygieneSecret, src)
		for _, spec := range []bmc.EventSubscriptionSpec{
			{Destination: old, Context: hygieneOwner},
			{Destination: dest, Context: hygieneOwner},
			{Destination: dest, Context: hygieneOwner},
			{Destination: other.URL + "/someone-else", Context: "someone-else"},
		} {
			if i%5 == 0 || spec.Context != hygieneOwner {
				if _, err := drv.Subscribe(ctx, spec); err != nil {
					t.Fatal(err)
				}
			}
		}
		_ = drv.Close(ctx)
	}
	env := []string{envHygieneBMCs + "=" + strings.Join(list, ","), envHygieneURL + "=" + base}

	// 10 host processes killed at different points, then one to the end.
	for r := range 10 {
		c := childtest.Start(t, "TestSubscriptionHygiene", "bmcevents-host", env...)
		for seen := 0; seen < r*5; {
			l, ok := <-c.Lines()
			if !ok {
				t.Fatal("host child exited early")
			}
			if strings.HasPrefix(l, "error") {
				t.Fatalf("host child: %s", l)
			}
			seen++
		}
		c.Kill()
	}
	final := runPass(t, env)
	dropped := map[int]bool{}
	check := func(when string) {
		t.Helper()
		leaked, missing := 0, 0
		for i, s := range srvs {
			dest, _ := bmcevents.Destination(base, hygieneSecret, fmt.Sprintf("bmc-%02d", i))
			ours, others := 0, 0
			for _, sub := range s.Subscriptions() {
				switch sub.Context {
				case hygieneOwner:
					ours++
					if sub.Destination != dest {
						t.Errorf("%s: bmc-%02d keeps a subscription to another destination", when, i)
					}
				case "someone-else":
					others++
				}
			}
			if ours > 1 {
				leaked += ours - 1
			}
			if ours == 0 {
				missing++
			}
			if want := map[bool]int{false: 1, true: 0}[dropped[i]]; others != want {
				t.Errorf("%s: bmc-%02d: the other owner's subscription was touched (%d left)", when, i, others)
			}
		}
		if leaked != 0 || missing != 0 {
			t.Fatalf("%s: %d subscriptions leaked, %d BMCs without one", when, leaked, missing)
		}
	}
	check("after 10 killed hosts and one complete pass")
	t.Logf("final pass: %s", final)

	// 10 BMCs forget their subscriptions; the next pass re-creates them.
	for i := range 10 {
		srvs[i*5].DropSubscriptions() // everybody's
		dropped[i*5] = true
	}
	again := runPass(t, env)
	if !strings.Contains(again, "created 10 ") {
		t.Fatalf("pass after the drop: %s, want 10 created", again)
	}
	check("after 10 BMCs dropped theirs and one pass")
	t.Logf("pass after 10 BMCs dropped their subscriptions: %s", again)

	// Each BMC's subscription works: an event from each reaches the
	// receiver, stored under its source.
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, s := range srvs {
		s.EmitEvent(redfishtest.Event{MessageID: "Base.1.0.Check", Message: "after the passes"})
	}
	for _, s := range srvs {
		if err := s.FlushEvents(fctx); err != nil {
			t.Fatal(err)
		}
	}
	evs, _, err := bmcevents.NewFollower(store).Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]bool{}
	for _, e := range evs {
		if e.MessageID == "Base.1.0.Check" {
			sources[e.Source] = true
		}
	}
	if len(sources) != n {
		t.Fatalf("test events from %d sources, want %d", len(sources), n)
	}

	// Release: none of the owner's left, the other's untouched.
	m := newManager(base)
	for i, s := range srvs {
		drv, err := dialer.DialDriver(ctx, s.Endpoint("1"), s.Credentials())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Release(ctx, drv); err != nil {
			t.Fatal(err)
		}
		_ = drv.Close(ctx)
		for _, sub := range s.Subscriptions() {
			if sub.Context == hygieneOwner {
				t.Fatalf("bmc-%02d: released but %s is left", i, sub.ID)
			}
		}
	}
}

func newManager(base string) *bmcevents.Manager {
	m, err := bmcevents.NewManager(bmcevents.ManagerConfig{Owner: hygieneOwner, URL: base, Secret: hygieneSecret,
		RegistryPrefixes: []string{"Base", "ResourceEvent", "OpenBMC"}})
	if err != nil {
		panic(err)
	}
	return m
}

// runPass runs one host process to the end and returns its summary.
func runPass(t *testing.T, env []string) string {
	t.Helper()
	c := childtest.Start(t, "TestSubscriptionHygiene", "bmcevents-host", env...)
	for l := range c.Lines() {
		if strings.HasPrefix(l, "error") {
			t.Fatalf("host child: %s", l)
		}
		if strings.HasPrefix(l, "done ") {
			c.Kill()
			return strings.TrimPrefix(l, "done ")
		}
	}
	t.Fatal("host child ended without a summary")
	return ""
}

// hostPass is the host process: Ensure on every BMC, 10 at a time, one
// line per BMC, then a summary.
func hostPass(bmcs, base string) {
	ctx := context.Background()
	m := newManager(base)
	dialer := redfish.NewDialer(redfish.Options{RequestTimeout: 10 * time.Second, RequestsPerSecond: -1})
	var mu sync.Mutex
	created, deleted, tested := 0, 0, 0
	work := make(chan string)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for kv := range work {
				src, addr, _ := strings.Cut(kv, "=")
				ep, err := bmc.ParseEndpoint(addr)
				if err != nil {
					fmt.Println("error", err)
					os.Exit(1)
				}
				drv, err := dialer.Dial(ctx, ep, bmc.Credentials{Username: "admin", Password: "redfishtest-secret"})
				if err != nil {
					fmt.Println("error", err)
					os.Exit(1)
				}
				res, err := m.Ensure(ctx, drv, src)
				_ = drv.Close(ctx)
				if err != nil {
					fmt.Println("error", err)
					os.Exit(1)
				}
				mu.Lock()
				if res.Created {
					created++
				}
				if res.TestEventSent {
					tested++
				}
				deleted += res.Deleted
				fmt.Println("ensured", src)
				mu.Unlock()
			}
		}()
	}
	for _, kv := range strings.Split(bmcs, ",") {
		work <- kv
	}
	close(work)
	wg.Wait()
	fmt.Printf("done created %d deleted %d test-events %d\n", created, deleted, tested)
	os.Exit(0)
}

// serveLoopback serves h on 127.0.0.1 until the test ends and returns its
// base URL.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}
