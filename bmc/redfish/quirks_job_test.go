package redfish_test

// The field quirks of docs/vendors.md through job.Runner, over real HTTP
// against the simulator's quirk switches (redfishtest/quirks.go).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// quirkStateChanges lists the requests that could change the server: all
// but reads and the session's login and logout.
func quirkStateChanges(srv *redfishtest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Method == http.MethodGet || strings.Contains(strings.ToLower(r.Path), "/sessionservice/sessions") {
			continue
		}
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// powerOnJob is one power-on task with the given timeout.
func powerOnJob(addr string, timeout time.Duration) job.Spec {
	return job.Spec{BMC: addr, CredentialsRef: "lab", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOn}, Timeout: task.Duration{Duration: timeout}},
	}}
}

// Supermicro answers 200 to a one-time PXE PATCH and reverts it
// (BootOnceReverted, reverted before any read). Without emulation the job
// fails VerificationFailed before powering on, naming the ways to emulate;
// with ?bootOnce=emulate the server boots from PXE (a persistent override
// at power on) and the override found is put back afterwards.
func TestQuirkOnceRevertedJob(t *testing.T) {
	var mu sync.Mutex
	var atPowerOn []string
	var srv *redfishtest.Server
	srv = redfishtest.NewServer(redfishtest.Config{BootOnce: redfishtest.BootOnceReverted, OnStateChange: func(c redfishtest.StateChange) {
		if c.What == "reset:On" {
			st := srv.System(c.System)
			mu.Lock()
			atPowerOn = append(atPowerOn, st.BootTarget+"/"+st.BootEnabled)
			mu.Unlock()
		}
	}})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")

	j := runJob(t, jobtest.Netboot(srv.Address("1"), "", 20*time.Second), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonVerificationFailed {
		t.Fatalf("job %s %s: %s; want Failed VerificationFailed", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	if msg := j.Status.Tasks[1].Message; !strings.Contains(msg, "?bootOnce=emulate") {
		t.Errorf("boot task message %q does not name ?bootOnce=emulate", msg)
	}
	if st := srv.System("1"); st.Boots != 0 || st.Power != "Off" {
		t.Fatalf("server %+v; want Off, not booted (the job stopped before power on)", st)
	}

	j = runJob(t, jobtest.Netboot(srv.Address("1")+"?bootOnce=emulate", "", 20*time.Second), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("with ?bootOnce=emulate: job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(atPowerOn) != 1 || atPowerOn[0] != "Pxe/Continuous" {
		t.Fatalf("override at power on %v; want one power on, with Pxe/Continuous", atPowerOn)
	}
	if st := srv.System("1"); st.Boots != 1 || st.BootEnabled != "Disabled" {
		t.Fatalf("server %+v; want booted once and the override found (disabled) put back", st)
	}
}

// iDRAC's few session slots: jobs on four systems behind one endpoint,
// run at once by one Runner, share one session on a BMC that holds one;
// no login is refused, and the session is logged out when the runner
// stops.
func TestQuirkSessionLimitJobs(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 4, MaxSessions: 1, PowerDelay: 20 * time.Millisecond})
	t.Cleanup(srv.Close)
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(testOptions()))
	r, err := job.NewRunner(job.Config{
		Store: memstore.New(),
		StepperConfig: job.StepperConfig{
			Dialer: &dialer, Credentials: bmc.StaticCredentials{"lab": srv.Credentials()}, PollInterval: 5 * time.Millisecond,
		},
		Workers: 8, EndpointConcurrency: 8, ScanInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	ids := []string{"1", "2", "3", "4"}
	for _, id := range ids {
		srv.SetPower(id, "On")
		if _, err := r.Submit(ctx, "netboot-"+id, jobtest.Netboot(srv.Address(id), "", 20*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	for _, id := range ids {
		j, err := r.Wait(wctx, "netboot-"+id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Result != conditions.ResultSucceeded {
			t.Errorf("system %s: %s %s", id, j.Status.Result, j.Status.Message)
		}
	}
	cancel()
	<-done
	for _, r := range srv.Requests() {
		if r.Note == "sessions full" {
			t.Errorf("a login was refused: %s %s", r.Method, r.Path)
		}
	}
	if srv.Logins() != 1 || srv.ActiveSessions() != 0 {
		t.Fatalf("%d logins, %d sessions left; want 1 login for four systems, logged out", srv.Logins(), srv.ActiveSessions())
	}
	for _, id := range ids {
		if st := srv.System(id); st.Power != "On" || st.Boots != 1 {
			t.Errorf("system %s after netboot: %+v", id, st)
		}
	}
}

// A system without PowerState: the netboot job fails NotSupported at its
// first task, sending nothing, long before the task's 20 s timeout. With
// PowerState null (the BMC cannot read it now) the job retries and ends
// TimedOut, saying why, also sending nothing.
func TestQuirkNoPowerStateJob(t *testing.T) {
	t.Run("absent", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{NoPowerState: true})
		t.Cleanup(srv.Close)
		start := time.Now()
		j := runJob(t, jobtest.Netboot(srv.Address("1"), "", 20*time.Second), srv.Credentials(), testOptions())
		if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonNotSupported ||
			!strings.Contains(j.Status.Message, "task 1 (") || !strings.Contains(j.Status.Message, "reports no PowerState") {
			t.Fatalf("job %s %s: %s; want Failed NotSupported at task 1, saying the system reports no PowerState", j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		t.Logf("message: %s", j.Status.Message)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the job took %s to fail; want it at once, not at the task's 20 s timeout", took)
		}
		if sent := quirkStateChanges(srv); len(sent) != 0 {
			t.Fatalf("state-changing requests: %v", sent)
		}
	})
	t.Run("null", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{NullPowerState: true})
		t.Cleanup(srv.Close)
		j := runJob(t, powerOnJob(srv.Address("1"), time.Second), srv.Credentials(), testOptions())
		t.Logf("message: %s", j.Status.Message)
		if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonTimedOut ||
			!strings.Contains(j.Status.Message, "reports PowerState null") {
			t.Fatalf("job %s %s: %s; want Failed TimedOut, saying PowerState is null", j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		if sent := quirkStateChanges(srv); len(sent) != 0 {
			t.Fatalf("state-changing requests: %v", sent)
		}
	})
}

// A DGX H100's BMC answers 503 on the HGX baseboard's system while the
// host is off. The host, addressed by UUID, netboots. A system that
// itself answers 503 while off cannot be powered on by bmckit (it reads
// before it acts): the job ends TimedOut naming the 503 and the BMC's
// message, having sent nothing (today's behaviour; docs/vendors.md).
func TestQuirkUnavailableWhileOffJobs(t *testing.T) {
	t.Run("host by UUID", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{Systems: 2, UnavailableWhileOff: []string{"1"}, PowerDelay: 20 * time.Millisecond})
		t.Cleanup(srv.Close)
		srv.SetPower("2", "On")
		addr := strings.TrimSuffix(srv.Address("2"), "/2") + "/" + redfishtest.SystemUUID(2)
		j := runJob(t, jobtest.Netboot(addr, "", 20*time.Second), srv.Credentials(), testOptions())
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		if st := srv.System("2"); st.Power != "On" || st.Boots != 1 {
			t.Fatalf("host after netboot: %+v", st)
		}
	})
	t.Run("the system itself", func(t *testing.T) {
		srv := redfishtest.NewServer(redfishtest.Config{UnavailableWhileOff: []string{"1"}})
		t.Cleanup(srv.Close)
		j := runJob(t, powerOnJob(srv.Address("1"), time.Second), srv.Credentials(), testOptions())
		t.Logf("message: %s", j.Status.Message)
		if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonTimedOut {
			t.Fatalf("job %s %s: %s; want Failed TimedOut", j.Status.Result, j.Status.Reason, j.Status.Message)
		}
		for _, want := range []string{"HTTP 503", "Ami.1.0.HMCCommuicationFailed"} {
			if !strings.Contains(j.Status.Message, want) {
				t.Errorf("job message %q does not say %q", j.Status.Message, want)
			}
		}
		if sent := quirkStateChanges(srv); len(sent) != 0 || srv.System("1").Power != "Off" {
			t.Fatalf("state-changing requests %v, server %s; want none, Off", sent, srv.System("1").Power)
		}
	})
}

// HPE iLO's lower-case links, through a job: the netboot job on a BMC
// addressed without a system path runs, and every request it sends is a
// link the BMC handed out (lower case).
func TestQuirkLowerCaseLinksJob(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := redfishtest.NewServer(redfishtest.Config{LowerCaseLinks: true, PowerDelay: 20 * time.Millisecond, OnRequest: func(r *http.Request) {
		mu.Lock()
		paths = append(paths, fmt.Sprintf("%s %s", r.Method, r.URL.Path))
		mu.Unlock()
	}})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, jobtest.Netboot(srv.Address(""), task.BootModeUEFI, 20*time.Second), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if _, path, _ := strings.Cut(p, " "); path != strings.ToLower(path) {
			t.Errorf("%s: a path not read from a link (they are all lower case)", p)
		}
	}
	if st := srv.System("1"); st.Power != "On" || st.Boots != 1 {
		t.Fatalf("server after netboot: %+v", st)
	}
}
