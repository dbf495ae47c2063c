package redfishtest_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// OnStateChange reports accepted resets, boot PATCHes and media actions once
// each, after they were applied, numbered in order and tagged with the
// caller header; reads and refused requests are not reported.
func TestOnStateChange(t *testing.T) {
	var (
		mu  sync.Mutex
		got []redfishtest.StateChange
		cur atomic.Pointer[redfishtest.Server]
	)
	srv := redfishtest.NewServer(redfishtest.Config{
		Systems: 2, Media: redfishtest.MediaUnderSystem, DropDuringTransition: true,
		PowerDelay: time.Hour, // the second reset arrives while the first is pending
		OnStateChange: func(c redfishtest.StateChange) {
			// Called after the change was applied and without the lock.
			if c.What == "reset:On" && c.Note == "" && cur.Load().System(c.System).Pending != "On" {
				t.Errorf("reported before it was applied: %+v", c)
			}
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
		},
	})
	defer srv.Close()
	cur.Store(srv)
	cl := &client{t: t, srv: srv}
	if st := cl.login("admin", "redfishtest-secret"); st != 201 {
		t.Fatalf("login: %d", st)
	}
	tag := map[string]string{redfishtest.CallerHeader: "job-a/1/2"}
	sys2 := "/redfish/v1/Systems/2"
	cl.do("GET", sys2, "", tag)
	cl.do("POST", sys2+"/Actions/ComputerSystem.Reset", `{"ResetType":"On"}`, tag)
	cl.do("POST", sys2+"/Actions/ComputerSystem.Reset", `{"ResetType":"ForceOff"}`, nil) // dropped
	cl.do("POST", sys2+"/Actions/ComputerSystem.Reset", `{"ResetType":"Bogus"}`, tag)    // refused
	cl.do("PATCH", "/redfish/v1/Systems/1", `{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once"}}`, tag)
	cl.do("PATCH", "/redfish/v1/Systems/1", `{"Boot":{"BootSourceOverrideTarget":"Floppy"}}`, tag) // refused
	cl.do("POST", sys2+"/VirtualMedia/CD/Actions/VirtualMedia.InsertMedia", `{"Image":"http://x/a.iso"}`, tag)
	cl.do("POST", sys2+"/VirtualMedia/CD/Actions/VirtualMedia.EjectMedia", `{}`, tag)

	want := []redfishtest.StateChange{
		{Seq: 1, Method: "POST", System: "2", What: "reset:On", Caller: "job-a/1/2"},
		{Seq: 2, Method: "POST", System: "2", What: "reset:ForceOff", Note: "dropped"},
		{Seq: 3, Method: "PATCH", System: "1", What: "boot:Pxe/Once", Caller: "job-a/1/2"},
		{Seq: 4, Method: "POST", System: "2", What: "media:insert CD http://x/a.iso", Caller: "job-a/1/2"},
		{Seq: 5, Method: "POST", System: "2", What: "media:eject CD", Caller: "job-a/1/2"},
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(got, func(a, b redfishtest.StateChange) int { return int(a.Seq - b.Seq) })
	if len(got) != len(want) {
		t.Fatalf("got %d state changes, want %d: %+v", len(got), len(want), got)
	}
	for i, g := range got {
		if g.Time.IsZero() || g.Path == "" {
			t.Errorf("change %d: no time or path: %+v", i, g)
		}
		g.Time, g.Path = want[i].Time, ""
		if g != want[i] {
			t.Errorf("change %d: got %+v, want %+v", i, g, want[i])
		}
	}
}

// OnRequest sees every request on arrival, reads and refused ones included,
// with its headers, before authentication: a client's whole request log.
func TestOnRequest(t *testing.T) {
	type seen struct{ method, path, caller string }
	var (
		mu  sync.Mutex
		got []seen
	)
	srv := redfishtest.NewServer(redfishtest.Config{
		RedirectAliases: map[string]string{"node-a": "1"},
		OnRequest: func(r *http.Request) {
			mu.Lock()
			got = append(got, seen{r.Method, r.URL.Path, r.Header.Get(redfishtest.CallerHeader)})
			mu.Unlock()
		},
	})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	tag := map[string]string{redfishtest.CallerHeader: "job-a/0/1"}
	cl.do("GET", "/redfish/v1/Systems/1", "", tag) // unauthenticated: 401, still seen
	if st := cl.login("admin", "redfishtest-secret"); st != 201 {
		t.Fatalf("login: %d", st)
	}
	cl.do("GET", "/redfish/v1/Systems/1", "", tag)
	cl.do("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", `{"ResetType":"On"}`, tag)
	cl.do("GET", "/redfish/v1/Systems/node-a", "", nil) // 307: the client follows it
	cl.do("GET", "/redfish/v1/NoSuchThing", "", nil)

	want := []seen{
		{"GET", "/redfish/v1/Systems/1", "job-a/0/1"},
		{"POST", "/redfish/v1/SessionService/Sessions", ""},
		{"GET", "/redfish/v1/Systems/1", "job-a/0/1"},
		{"POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", "job-a/0/1"},
		{"GET", "/redfish/v1/Systems/node-a", ""},
		{"GET", "/redfish/v1/Systems/1", ""},
		{"GET", "/redfish/v1/NoSuchThing", ""},
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("OnRequest saw\n%v\nwant\n%v", got, want)
	}
	if n := len(srv.Requests()); n != len(want) {
		t.Errorf("the request log holds %d requests, OnRequest saw %d", n, len(want))
	}
}

// RequestDelayFunc delays the requests it picks: their answers and effects
// come that much later, also for a client that gave up meanwhile.
func TestRequestDelayFunc(t *testing.T) {
	const delay = 150 * time.Millisecond
	srv := redfishtest.NewServer(redfishtest.Config{
		Sessions: redfishtest.SessionsNone,
		RequestDelayFunc: func(method, _ string) time.Duration {
			if method == http.MethodPost {
				return delay
			}
			return 0
		},
	})
	defer srv.Close()
	creds := srv.Credentials()
	post := func(ctx context.Context, resetType string) (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL()+"/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
			strings.NewReader(`{"ResetType":"`+resetType+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(creds.Username, creds.Password)
		began := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("reset %s: %d", resetType, resp.StatusCode)
		}
		return time.Since(began), nil
	}
	if took, err := post(context.Background(), "On"); err != nil || took < delay {
		t.Fatalf("a delayed reset took %v (%v), want at least %v", took, err, delay)
	}
	if got := srv.System("1").Power; got != "On" {
		t.Fatalf("power %s after the reset was answered", got)
	}
	// A client that gives up does not take the request back.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := post(ctx, "ForceOff"); err == nil {
		t.Fatal("a reset whose client gave up after 20 ms was answered")
	}
	if got := srv.System("1").Power; got != "On" {
		t.Fatalf("the reset took effect before its delay: power %s", got)
	}
	deadline := time.Now().Add(10 * delay)
	for srv.System("1").Power != "Off" {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned reset never took effect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// GETs are not delayed.
	began := time.Now()
	req, _ := http.NewRequest("GET", srv.URL()+"/redfish/v1/Systems/1", nil)
	req.SetBasicAuth(creds.Username, creds.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(began); took >= delay {
		t.Fatalf("an undelayed GET took %v", took)
	}
}
