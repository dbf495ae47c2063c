package redfishtest_test

import (
	"slices"
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
