package redfish_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
)

// trace renders the request log as "METHOD path" lines.
func trace(reqs []redfishtest.Request) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s %s %d\n", r.Method, r.Path, r.Status)
	}
	return b.String()
}

// A system addressed by an alias that the BMC redirects (307) to its
// canonical URL: the driver adopts the canonical URI at Dial, so every
// later status check and PATCH is one request.
func TestRedirectedSystemIsAdopted(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{RedirectAliases: map[string]string{"node-a": "1"}}, testOptions(), "node-a", false)
	ctx := context.Background()
	if n := redirects(srv.Requests()); n != 1 {
		t.Fatalf("%d redirects at Dial; want 1:\n%s", n, trace(srv.Requests()))
	}
	srv.ClearRequests()
	for range 3 {
		if _, err := drv.PowerState(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := trace(srv.Requests()); got != strings.Repeat("GET /redfish/v1/Systems/1 200\n", 3) {
		t.Fatalf("3 status checks sent:\n%s", got)
	}
	srv.ClearRequests()
	if err := drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}); err != nil {
		t.Fatal(err)
	}
	if got := trace(srv.Requests()); got != "PATCH /redfish/v1/Systems/1 204\nGET /redfish/v1/Systems/1 200\n" {
		t.Fatalf("SetBootOverride sent:\n%s", got)
	}
	if st := srv.System("1"); st.BootTarget != "Pxe" {
		t.Fatalf("boot target %q", st.BootTarget)
	}
}

func TestRedirectedSystemJob(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{RedirectAliases: map[string]string{"node-a": "1"}})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, netbootSpec(srv.Address("node-a")), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
	}
	if n := redirects(srv.Requests()); n != 1 {
		t.Fatalf("%d redirects in the job; want 1 (at Dial):\n%s", n, trace(srv.Requests()))
	}
	if st := srv.System("1"); st.Power != "On" || st.Boots != 1 {
		t.Fatalf("server after netboot: %+v", st)
	}
}

func redirects(reqs []redfishtest.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Status == 307 {
			n++
		}
	}
	return n
}

// A failed Dial reports what it cost: its error carries the Stats no
// Driver is left to report.
func TestDialErrorReportsStats(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sessions redfishtest.SessionMode
		system   string
		want     bmc.Stats
	}{
		{"wrong password", redfishtest.SessionsCreatedWithBody, "1", bmc.Stats{Requests: 2, Connections: 1}},
		{"no such system after login", redfishtest.SessionsCreatedWithBody, "9", bmc.Stats{Requests: 6, Connections: 1, Logins: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, dialer := startSim(t, redfishtest.Config{Sessions: tc.sessions}, testOptions(), false)
			creds := srv.Credentials()
			if tc.name == "wrong password" {
				creds.Password = "not-the-password"
			}
			_, err := dialer.DialDriver(context.Background(), srv.Endpoint(tc.system), creds)
			if err == nil {
				t.Fatal("Dial succeeded")
			}
			var oe *bmc.OpError
			if !errors.As(err, &oe) {
				t.Fatalf("%T %v is no *bmc.OpError", err, err)
			}
			var sr bmc.StatsReporter
			if !errors.As(err, &sr) {
				t.Fatalf("%T %v reports no Stats", err, err)
			}
			got := sr.Stats()
			got.Throttled, got.ThrottleWait = 0, 0
			if got != tc.want || int64(len(srv.Requests())) != got.Requests {
				t.Fatalf("stats %+v; want %+v; the BMC saw:\n%s", got, tc.want, trace(srv.Requests()))
			}
		})
	}
}
