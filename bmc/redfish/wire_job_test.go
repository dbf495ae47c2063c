package redfish_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
)

// job.Status.Wire counts everything that went on the wire: a finished job's
// includes the logout, and a job whose login failed still has one.
func TestJobWireCountsEverything(t *testing.T) {
	t.Run("logout", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{})
		t.Cleanup(srv.Close)
		srv.SetPower("1", "On")
		j := runJob(t, netbootSpec(srv.Address("1")), srv.Credentials(), testOptions())
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
		}
		if w := j.Status.Wire; w == nil || w.Requests != int64(len(srv.Requests())) {
			t.Fatalf("job wire %+v; the server saw %d requests (the logout included)", w, len(srv.Requests()))
		}
	})
	t.Run("failed login", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{})
		t.Cleanup(srv.Close)
		j := runJob(t, netbootSpec(srv.Address("1")), bmc.Credentials{Username: "admin", Password: "not-the-password-7"}, testOptions())
		if j.Status.Reason != conditions.ReasonUnauthorized {
			t.Fatalf("job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		if w := j.Status.Wire; w == nil || w.Requests == 0 || w.Requests != int64(len(srv.Requests())) {
			t.Fatalf("job wire %+v after a failed login; the server saw %d requests", w, len(srv.Requests()))
		}
	})
}

// Jobs on systems that share one session (bmc.SystemOpener) each count
// their own requests in Status.Wire, not the session's running totals
// (issue 22: 200 systems on one endpoint summed to 112-177x the real
// traffic): together they are every request the BMC received. The login
// counts toward the job that opened the session, the logout toward the job
// whose completion closed it.
func TestWirePerJobOnSharedSession(t *testing.T) {
	const n = 6
	// Power changes take a while, so the jobs overlap on one session.
	srv := redfishtest.NewServer(redfishtest.Config{Systems: n, PowerDelay: 300 * time.Millisecond})
	t.Cleanup(srv.Close)
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(testOptions()))
	specs := map[string]job.Spec{}
	for i := 1; i <= n; i++ {
		id := strconv.Itoa(i)
		srv.SetPower(id, "On")
		spec := netbootSpec(srv.Address(id))
		spec.CredentialsRef = "lab"
		specs[id] = spec
	}
	jobs := jobtest.RunAll(t, job.Config{
		StepperConfig: job.StepperConfig{
			Dialer:       &dialer,
			Credentials:  bmc.StaticCredentials{"lab": srv.Credentials()},
			PollInterval: 5 * time.Millisecond,
		},

		ScanInterval: 20 * time.Millisecond,
	}, specs, 2*time.Minute)
	if srv.Logins() != 1 {
		t.Fatalf("%d logins; want the %d jobs on one session", srv.Logins(), n)
	}
	// What the BMC received, per system, and the session's own requests
	// (service root, login, logout).
	perSystem := map[string]int64{}
	var session []string
	for _, r := range srv.Requests() {
		if rest, ok := strings.CutPrefix(r.Path, "/redfish/v1/Systems/"); ok {
			id, _, _ := strings.Cut(rest, "/")
			perSystem[id]++
			continue
		}
		session = append(session, r.Method+" "+r.Path)
	}
	var sum bmc.Stats
	opened, closed := 0, 0
	for id, j := range jobs {
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %s: %s %s", id, j.Status.Result, j.Status.Message)
		}
		w := j.Status.Wire
		if w == nil {
			t.Fatalf("job %s has no Wire", id)
		}
		sum.Requests += w.Requests
		sum.Logins += w.Logins
		sum.Connections += w.Connections
		// Its own system's requests, plus the service root and the login
		// for the job that opened the session, plus the logout for the
		// one that closed it.
		want := perSystem[id]
		if w.Logins == 1 {
			opened++
			want += 2
		}
		if extra := w.Requests - want; extra == 1 {
			closed++
		} else if extra != 0 {
			t.Errorf("job %s: Wire %+v; want its system's %d requests (+2 if it logged in, +1 if it logged out)", id, *w, perSystem[id])
		}
	}
	if opened != 1 || closed != 1 {
		t.Errorf("%d jobs counted the login and %d the logout; want one each (session requests %v)", opened, closed, session)
	}
	if sum.Requests != int64(len(srv.Requests())) || sum.Logins != 1 || sum.Connections != srv.Connections() {
		t.Errorf("the jobs' Wire add up to %+v; the BMC received %d requests on %d connections, 1 login", sum, len(srv.Requests()), srv.Connections())
	}
}
