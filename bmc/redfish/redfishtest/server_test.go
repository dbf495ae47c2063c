package redfishtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
)

// client speaks raw HTTP to the simulator (the driver's own tests cover the
// simulator through gofish; these pin its wire behaviour).
type client struct {
	t     *testing.T
	srv   *redfishtest.Server
	token string
}

func (c *client) do(method, path, body string, header map[string]string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.srv.URL()+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("X-Auth-Token", c.token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *client) login(user, pass string) int {
	c.t.Helper()
	resp, _ := c.do("POST", "/redfish/v1/SessionService/Sessions", `{"UserName":"`+user+`","Password":"`+pass+`"}`, nil)
	c.token = resp.Header.Get("X-Auth-Token")
	return resp.StatusCode
}

func TestSessionsAndCredentials(t *testing.T) {
	for _, c := range []struct {
		mode redfishtest.SessionMode
		want int
	}{{redfishtest.SessionsCreatedWithBody, 201}, {redfishtest.SessionsNoContent, 204}} {
		srv := redfishtest.NewServer(redfishtest.Config{Sessions: c.mode})
		defer srv.Close()
		cl := &client{t: t, srv: srv}
		if got := cl.login("admin", "wrong"); got != 401 {
			t.Fatalf("wrong password: %d, want 401", got)
		}
		if got := cl.login("admin", "redfishtest-secret"); got != c.want || cl.token == "" {
			t.Fatalf("login: %d token %q, want %d and a token", got, cl.token, c.want)
		}
		if resp, _ := cl.do("GET", "/redfish/v1/Systems/1", "", nil); resp.StatusCode != 200 {
			t.Fatalf("GET with the token: %d", resp.StatusCode)
		}
		srv.ExpireSessions()
		if resp, _ := cl.do("GET", "/redfish/v1/Systems/1", "", nil); resp.StatusCode != 401 {
			t.Fatalf("GET after expiry: %d, want 401", resp.StatusCode)
		}
		for _, r := range srv.Requests() {
			if strings.Contains(r.Body, "redfishtest-secret") || strings.Contains(r.Body, "wrong") {
				t.Fatalf("request log holds a session body: %+v", r)
			}
		}
	}
	srv := redfishtest.NewServer(redfishtest.Config{Sessions: redfishtest.SessionsNone})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	_, root := cl.do("GET", "/redfish/v1/", "", nil)
	if strings.Contains(root, "Sessions") {
		t.Fatalf("service root without SessionService names Sessions: %s", root)
	}
	if resp, _ := cl.do("GET", "/redfish/v1/Systems", "", map[string]string{"Authorization": "Basic YWRtaW46d3Jvbmc="}); resp.StatusCode != 401 {
		t.Fatalf("wrong basic auth: %d", resp.StatusCode)
	}
}

func TestSessionTTL(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := redfishtest.NewServer(redfishtest.Config{SessionTTL: time.Minute, Clock: clk})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	cl.login("admin", "redfishtest-secret")
	clk.Advance(59 * time.Second)
	if resp, _ := cl.do("GET", "/redfish/v1/Systems/1", "", nil); resp.StatusCode != 200 {
		t.Fatalf("within the TTL: %d", resp.StatusCode)
	}
	clk.Advance(61 * time.Second)
	if resp, _ := cl.do("GET", "/redfish/v1/Systems/1", "", nil); resp.StatusCode != 401 {
		t.Fatalf("past the TTL: %d, want 401", resp.StatusCode)
	}
}

func TestETagModes(t *testing.T) {
	patch := `{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once"}}`
	for _, c := range []struct {
		mode              redfishtest.ETagMode
		without, withGood int
	}{
		{redfishtest.ETagsOptional, 204, 204},
		{redfishtest.ETagsRequired, 428, 204},
		{redfishtest.ETagsRejected, 204, 400},
	} {
		srv := redfishtest.NewServer(redfishtest.Config{ETags: c.mode})
		defer srv.Close()
		cl := &client{t: t, srv: srv}
		cl.login("admin", "redfishtest-secret")
		if resp, _ := cl.do("PATCH", "/redfish/v1/Systems/1", patch, nil); resp.StatusCode != c.without {
			t.Fatalf("mode %d without If-Match: %d, want %d", c.mode, resp.StatusCode, c.without)
		}
		resp, _ := cl.do("GET", "/redfish/v1/Systems/1", "", nil)
		etag := resp.Header.Get("ETag")
		if resp, _ := cl.do("PATCH", "/redfish/v1/Systems/1", patch, map[string]string{"If-Match": etag}); resp.StatusCode != c.withGood {
			t.Fatalf("mode %d with If-Match: %d, want %d", c.mode, resp.StatusCode, c.withGood)
		}
		if c.mode == redfishtest.ETagsOptional {
			if resp, _ := cl.do("PATCH", "/redfish/v1/Systems/1", patch, map[string]string{"If-Match": `W/"999"`}); resp.StatusCode != 412 {
				t.Fatalf("stale If-Match: %d, want 412", resp.StatusCode)
			}
		}
	}
}

func TestPATCHRefusesReadOnlyProperties(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	cl.login("admin", "redfishtest-secret")
	for _, body := range []string{
		`{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideTarget@Redfish.AllowableValues":["Pxe"]}}`,
		`{"PowerState":"On"}`,
		`{"Boot":{"BootSourceOverrideTarget":"Floppy"}}`,
	} {
		if resp, _ := cl.do("PATCH", "/redfish/v1/Systems/1", body, nil); resp.StatusCode != 400 {
			t.Fatalf("PATCH %s: %d, want 400", body, resp.StatusCode)
		}
	}
}

func TestDelayedPowerAndDroppedRequests(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := redfishtest.NewServer(redfishtest.Config{PowerDelay: 5 * time.Second, DropDuringTransition: true,
		RefusedResetTypes: []string{"PowerCycle"}, Clock: clk})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	cl.login("admin", "redfishtest-secret")
	reset := func(rt string) int {
		resp, _ := cl.do("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", `{"ResetType":"`+rt+`"}`, nil)
		return resp.StatusCode
	}
	state := func() string {
		_, body := cl.do("GET", "/redfish/v1/Systems/1", "", nil)
		var doc struct{ PowerState string }
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.PowerState
	}
	if got := reset("On"); got != 204 {
		t.Fatalf("On: %d", got)
	}
	if got := state(); got != "PoweringOn" {
		t.Fatalf("state during the delay: %s", got)
	}
	if got := reset("ForceOff"); got != 204 {
		t.Fatalf("ForceOff during the change: %d (should be accepted, then dropped)", got)
	}
	clk.Advance(5 * time.Second)
	if got := state(); got != "On" {
		t.Fatalf("state after the delay: %s, want On (ForceOff dropped)", got)
	}
	if st := srv.System("1"); st.Dropped != 1 || st.Boots != 1 {
		t.Fatalf("snapshot %+v: want one dropped request, one boot", st)
	}
	if got := reset("PowerCycle"); got != 501 {
		t.Fatalf("refused PowerCycle: %d, want 501", got)
	}
	if got := reset("Explode"); got != 400 {
		t.Fatalf("unknown reset type: %d, want 400", got)
	}
	if ch := srv.PowerChanges(); len(ch) != 1 || ch[0].Lands.Sub(ch[0].Requested) != 5*time.Second {
		t.Fatalf("power changes %+v", ch)
	}
}

func TestFaults(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Faults: redfishtest.Faults{Rate: 0.5, Kinds: []redfishtest.Fault{redfishtest.Fault503}}})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	codes := map[int]int{}
	for range 40 {
		resp, _ := cl.do("GET", "/redfish/v1/", "", nil)
		codes[resp.StatusCode]++
	}
	if codes[503] == 0 || codes[200] == 0 {
		t.Fatalf("50%% 503: got %v", codes)
	}
	srv.SetFaults(0, func(string, string) redfishtest.Fault { return redfishtest.FaultReset })
	if _, err := http.Get(srv.URL() + "/redfish/v1/"); err == nil {
		t.Fatal("a reset connection answered")
	}
	srv.SetFaults(0, nil)
	if resp, _ := cl.do("GET", "/redfish/v1/", "", nil); resp.StatusCode != 200 {
		t.Fatalf("after faults stopped: %d", resp.StatusCode)
	}
}

// Fault400 refuses the chosen request with a 400 and leaves it unhandled:
// the BIOS PATCH of system 2 fails, its attributes stay as they were,
// system 1's is taken.
func TestFault400(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 2, Faults: redfishtest.Faults{Func: func(method, path string) redfishtest.Fault {
		if method == "PATCH" && path == "/redfish/v1/Systems/2/Bios/Settings" {
			return redfishtest.Fault400
		}
		return redfishtest.FaultNone
	}}})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	cl.login("admin", "redfishtest-secret")
	body := `{"Attributes": {"BootMode": "Bios"}}`
	if resp, _ := cl.do("PATCH", "/redfish/v1/Systems/2/Bios/Settings", body, nil); resp.StatusCode != 400 {
		t.Fatalf("faulted PATCH: %d, want 400", resp.StatusCode)
	}
	if resp, _ := cl.do("PATCH", "/redfish/v1/Systems/1/Bios/Settings", body, nil); resp.StatusCode != 204 {
		t.Fatalf("PATCH of system 1: %d, want 204", resp.StatusCode)
	}
	if _, pending := srv.BIOSAttributes("2"); len(pending) != 0 {
		t.Fatalf("system 2 took the refused change: pending %v", pending)
	}
	if _, pending := srv.BIOSAttributes("1"); pending["BootMode"] != "Bios" {
		t.Fatalf("system 1 pending %v, want BootMode Bios", pending)
	}
	var logged bool
	for _, r := range srv.Requests() {
		if r.Method == "PATCH" && r.Path == "/redfish/v1/Systems/2/Bios/Settings" {
			logged = r.Fault == redfishtest.Fault400 && r.Status == 400
		}
	}
	if !logged {
		t.Fatal("the refused PATCH is not logged with its fault and status")
	}
}

// The request limit is a bucket of RequestLimit tokens refilled at
// RequestLimit per second: beyond it requests are answered 503 with
// Retry-After, counted, logged, and take no token; PeakRate sees the busiest
// second, refused requests included.
func TestRequestLimit(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := redfishtest.NewServer(redfishtest.Config{RequestLimit: 4, Clock: clk})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	get := func() *http.Response {
		resp, _ := cl.do("GET", "/redfish/v1/", "", nil)
		return resp
	}
	for i := range 4 {
		if resp := get(); resp.StatusCode != 200 {
			t.Fatalf("request %d within the limit: %d", i+1, resp.StatusCode)
		}
	}
	resp := get()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("5th request in the same second: %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := srv.OverLimit(); got != 1 {
		t.Fatalf("OverLimit = %d, want 1", got)
	}
	if log := srv.Requests(); log[len(log)-1].Note != "over limit" || log[len(log)-1].Status != 503 {
		t.Fatalf("log entry of the refused request: %+v", log[len(log)-1])
	}
	clk.Advance(250 * time.Millisecond) // one token back
	if resp := get(); resp.StatusCode != 200 {
		t.Fatalf("after a quarter second: %d, want 200", resp.StatusCode)
	}
	if resp := get(); resp.StatusCode != 503 {
		t.Fatalf("second request after a quarter second: %d, want 503", resp.StatusCode)
	}
	if got := srv.PeakRate(); got != 7 {
		t.Fatalf("PeakRate = %v, want 7 (every request arrived within one second)", got)
	}
	clk.Advance(2 * time.Second)
	for range 3 {
		get()
	}
	if got, over := srv.PeakRate(), srv.OverLimit(); got != 7 || over != 2 {
		t.Fatalf("after a quiet second: PeakRate %v OverLimit %d, want 7 and 2", got, over)
	}
	srv.SetRequestLimit(0)
	for range 10 {
		if resp := get(); resp.StatusCode != 200 {
			t.Fatalf("without a limit: %d", resp.StatusCode)
		}
	}
	if got := srv.PeakRate(); got != 13 {
		t.Fatalf("PeakRate = %v, want 13", got)
	}
}

// Config.Users are accepted besides Username/Password, by session login
// and basic auth.
func TestExtraUsers(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Users: map[string]string{"ops": "ops-secret"}})
	defer srv.Close()
	cl := &client{t: t, srv: srv}
	if got := cl.login("ops", "wrong"); got != 401 {
		t.Fatalf("ops with a wrong password: %d, want 401", got)
	}
	if got := cl.login("ops", "ops-secret"); got != 201 {
		t.Fatalf("ops: %d, want 201", got)
	}
	if got := cl.login("admin", "redfishtest-secret"); got != 201 {
		t.Fatalf("admin: %d, want 201", got)
	}
	cl.token = ""
	resp, _ := cl.do("GET", "/redfish/v1/Systems", "", map[string]string{"Authorization": "Basic b3BzOm9wcy1zZWNyZXQ="}) // ops:ops-secret
	if resp.StatusCode != 200 {
		t.Fatalf("basic auth as ops: %d, want 200", resp.StatusCode)
	}
}
