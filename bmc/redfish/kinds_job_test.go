package redfish_test

// Jobs with the read-only tasks, UEFI HTTP boot and a BMC reset, through
// job.Runner and the Redfish driver against redfishtest.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// oneTask is a job of the given tasks against srv's system 1.
func oneTask(srv *redfishtest.Server, tasks ...task.Spec) job.Spec {
	return job.Spec{BMC: srv.Address("1"), CredentialsRef: "lab", Tasks: tasks}
}

// bareSession is what a dial and a close cost on srv: the requests a job
// makes on top of them are its tasks' own.
func bareSession(t *testing.T, srv *redfishtest.Server) []string {
	t.Helper()
	n := len(srv.Requests())
	drv, err := redfish.NewDialer(testOptions()).Dial(context.Background(), srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return anonymous(summary(since(srv, n)))
}

// anonymous replaces session ids in request summaries.
func anonymous(reqs []string) []string {
	for i, r := range reqs {
		if k := strings.Index(r, "/Sessions/"); k >= 0 {
			reqs[i] = r[:k] + "/Sessions/{id}"
		}
	}
	return reqs
}

func requireSucceeded(t *testing.T, j *job.Job) {
	t.Helper()
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s (%s): %s", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
}

// powerStatus and reachable cost one session and one GET of the system
// each: the job's requests are a bare session's plus one GET per task.
func TestReadOnlyTasksOneSessionOneReadEach(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tasks []task.Spec
	}{
		{"powerStatus", []task.Spec{{PowerStatus: &task.PowerStatusAction{}}}},
		{"reachable", []task.Spec{{Reachable: &task.ReachableAction{}}}},
		{"both", []task.Spec{{Reachable: &task.ReachableAction{}}, {PowerStatus: &task.PowerStatusAction{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redfishtest.NewServer(redfishtest.Config{})
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			bare := bareSession(t, srv)
			n, logins := len(srv.Requests()), srv.Logins()
			j := runJob(t, oneTask(srv, tc.tasks...), srv.Credentials(), testOptions())
			requireSucceeded(t, j)
			got := anonymous(summary(since(srv, n)))
			want := slices.Clone(bare)
			for range tc.tasks {
				// The tasks' reads come before the logout.
				want = slices.Insert(want, len(want)-1, "GET /redfish/v1/Systems/1")
			}
			if !slices.Equal(got, want) {
				t.Fatalf("requests:\n  %s\nwant a bare session's plus one GET of the system per task:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if l := srv.Logins() - logins; l != 1 {
				t.Fatalf("%d logins; want 1", l)
			}
			for i, ts := range j.Status.Tasks {
				if ts.PowerState != "On" {
					t.Errorf("task %d: PowerState %q, want On", i, ts.PowerState)
				}
			}
			if st := srv.System("1"); st.Power != "On" || len(st.Resets) != 0 || st.BootTarget != "None" {
				t.Fatalf("a read-only job changed the system: %+v", st)
			}
		})
	}
}

func TestHTTPBootJobSetsAndReadsBackTheURI(t *testing.T) {
	const uri = "https://boot.example/ipxe.efi"
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	j := runJob(t, oneTask(srv,
		task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: uri, Mode: task.BootModeUEFI}},
	), srv.Credentials(), testOptions())
	requireSucceeded(t, j)
	st := srv.System("1")
	if st.BootTarget != "UefiHttp" || st.BootEnabled != "Once" || st.HTTPBootURI != uri || st.BootMode != "UEFI" {
		t.Fatalf("BMC holds %+v; want UefiHttp once from %s in UEFI", st, uri)
	}
	if msg := j.Status.Tasks[0].Message; msg != "uefi-http (once, uefi) from "+uri {
		t.Fatalf("task message %q; want the override read back with its URI", msg)
	}
	var patch string
	for _, r := range srv.Requests() {
		if r.Method == "PATCH" {
			patch = r.Body
		}
	}
	if !strings.Contains(patch, `"HttpBootUri":"`+uri+`"`) || !strings.Contains(patch, `"BootSourceOverrideTarget":"UefiHttp"`) {
		t.Fatalf("PATCH body %s", patch)
	}
}

// BMCs without UEFI HTTP boot fail the task with reason NotSupported and
// receive no PATCH.
func TestHTTPBootJobNotSupported(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		cfg        redfishtest.Config
	}{
		{"NoHTTPBootURI", "has no HttpBootUri", redfishtest.Config{NoHTTPBootURI: true}},
		{"NoUefiHttpTarget", "the BMC allows only None, Pxe, Hdd", redfishtest.Config{BootTargets: []string{"None", "Pxe", "Hdd"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redfishtest.NewServer(tc.cfg)
			t.Cleanup(srv.Close)
			j := runJob(t, oneTask(srv,
				task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http://10.0.0.1/x.efi"}},
				task.Spec{Power: &task.PowerAction{Op: task.PowerOn}},
			), srv.Credentials(), testOptions())
			if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonNotSupported {
				t.Fatalf("job %s (%s): %s; want Failed (NotSupported)", j.Status.Result, j.Status.Reason, j.Status.Message)
			}
			if !strings.Contains(j.Status.Message, tc.want) || !strings.Contains(j.Status.Message, "task 1 (boot http (once) from http://10.0.0.1/x.efi) failed") {
				t.Fatalf("message %q should name the task and say why (%q)", j.Status.Message, tc.want)
			}
			for _, r := range srv.Requests() {
				if r.Method != "GET" && !(r.Method == "POST" && strings.HasSuffix(r.Path, "/Sessions")) && r.Method != "DELETE" {
					t.Fatalf("request %s %s sent to a BMC that cannot boot over HTTP", r.Method, r.Path)
				}
			}
			if st := srv.System("1"); st.Power != "Off" {
				t.Fatalf("the job went on after the failed task: power %s", st.Power)
			}
		})
	}
}

// The BMC drops every request for a while after its reset; the task
// completes once it answers again, through a new session, and the server's
// power is untouched.
func TestBMCResetJobWaitsUntilTheSimulatorAnswers(t *testing.T) {
	const downtime = 300 * time.Millisecond
	srv := redfishtest.NewServer(redfishtest.Config{BMCResetDowntime: downtime})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, oneTask(srv,
		task.Spec{BMCReset: &task.BMCResetAction{Type: task.BMCResetCold}},
		task.Spec{PowerStatus: &task.PowerStatusAction{}},
	), srv.Credentials(), testOptions())
	requireSucceeded(t, j)
	if n := srv.BMCResets(); n != 1 {
		t.Fatalf("%d Manager.Reset requests; want 1", n)
	}
	var resetAt time.Time
	down, after := 0, 0
	for _, r := range srv.Requests() {
		switch {
		case r.Method == "POST" && strings.HasSuffix(r.Path, "/Manager.Reset"):
			if !strings.Contains(r.Body, "ForceRestart") {
				t.Fatalf("cold reset sent as %s", r.Body)
			}
			resetAt = r.Time
		case r.Note == "down":
			down++
		case !resetAt.IsZero() && r.Status == 200:
			after++
		}
	}
	if down == 0 {
		t.Fatal("no request reached the BMC while it was down; the test proves nothing")
	}
	ts := j.Status.Tasks[0]
	if ts.CompletionTime.Sub(resetAt) < downtime-10*time.Millisecond {
		t.Fatalf("the reset task completed %s after the reset, before the BMC answered again (%s down)", ts.CompletionTime.Sub(resetAt), downtime)
	}
	if ts.PowerState != "On" || j.Status.Tasks[1].PowerState != "On" {
		t.Fatalf("power read %q then %q; want On (a BMC reset leaves the server alone)", ts.PowerState, j.Status.Tasks[1].PowerState)
	}
	if st := srv.System("1"); st.Power != "On" || len(st.Resets) != 0 {
		t.Fatalf("system after a BMC reset: %+v", st)
	}
	if srv.Logins() != 2 {
		t.Fatalf("%d logins; want 2 (before the reset, after it)", srv.Logins())
	}
	if srv.ActiveSessions() != 0 {
		t.Fatalf("%d sessions left open", srv.ActiveSessions())
	}
	t.Logf("%d requests dropped while down, %d answered after; task: %s", down, after, ts.Message)
}
