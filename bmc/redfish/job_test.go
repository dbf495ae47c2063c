package redfish_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/task"
)

func netbootSpec(addr string) job.Spec {
	return jobtest.Netboot(addr, task.BootModeUEFI, 20*time.Second)
}

// runJob runs one job through a Runner with the Redfish dialer and returns
// it completed.
func runJob(t *testing.T, spec job.Spec, creds bmc.Credentials, opts redfish.Options) *job.Job {
	t.Helper()
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(opts))
	return jobtest.Run(t, job.Config{
		StepperConfig: job.StepperConfig{
			Dialer:       &dialer,
			PollInterval: 5 * time.Millisecond,
			Retry:        retry.Policy{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond, Jitter: 0.2},
			Logger:       opts.Logger,
		},

		ScanInterval: 20 * time.Millisecond,
	}, creds, spec, 2*time.Minute)
}

func TestNetbootJobThroughRunner(t *testing.T) {
	// Power changes land 50 ms late; a second request during a pending
	// change is dropped.
	srv := redfishtest.NewServer(redfishtest.Config{PowerDelay: 50 * time.Millisecond, DropDuringTransition: true})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, netbootSpec(srv.Address("1")), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
	}
	st := srv.System("1")
	if st.Power != "On" || st.BootTarget != "None" || st.Boots != 1 {
		t.Fatalf("server after netboot: %+v; want On, booted once, the one-time override consumed", st)
	}
	if st.Resets["ForceOff"] != 1 || st.Resets["On"] != 1 || st.Dropped != 0 {
		t.Fatalf("reset requests %v, dropped %d; want one ForceOff and one On", st.Resets, st.Dropped)
	}
	if srv.Logins() != 1 || srv.Connections() != 1 {
		t.Fatalf("server saw %d logins and %d connections; want 1 and 1", srv.Logins(), srv.Connections())
	}
	if w := j.Status.Wire; w == nil || w.Logins != 1 || w.Connections != 1 {
		t.Fatalf("job wire stats %+v; want one login and one connection", w)
	}
	if srv.ActiveSessions() != 0 {
		t.Fatalf("%d sessions left open after the job", srv.ActiveSessions())
	}
}

func TestNetbootJobSurvives30PercentFaults(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{
		PowerDelay: 20 * time.Millisecond,
		Faults:     redfishtest.Faults{Rate: 0.3, Kinds: []redfishtest.Fault{redfishtest.Fault503, redfishtest.FaultReset}, Seed: 7},
	})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, netbootSpec(srv.Address("1")), srv.Credentials(), testOptions())
	faulted := 0
	for _, r := range srv.Requests() {
		if r.Fault != redfishtest.FaultNone {
			faulted++
		}
	}
	t.Logf("%d of %d requests faulted; job %s; wire %+v", faulted, len(srv.Requests()), j.Status.Result, j.Status.Wire)
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
	}
	if faulted == 0 {
		t.Fatal("no request was faulted; the test proves nothing")
	}
	if st := srv.System("1"); st.Power != "On" || st.Boots != 1 {
		t.Fatalf("server after netboot: %+v", st)
	}
}

func TestWrongCredentialsJobFailsAtOnce(t *testing.T) {
	const password = "wrong-horse-battery"
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	var logs logBuffer
	j := runJob(t, netbootSpec(srv.Address("1")), bmc.Credentials{Username: "admin", Password: password}, logs.options(testOptions()))
	if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonUnauthorized {
		t.Fatalf("job %s/%s: %s; want Failed/Unauthorized", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	msg := j.Status.Message
	if !strings.Contains(msg, srv.Endpoint("1").String()) || !strings.Contains(msg, "rejected the credentials") {
		t.Fatalf("message %q should name the BMC and the cause", msg)
	}
	if attempts := srv.Logins(); attempts != 0 {
		t.Fatalf("%d sessions created with wrong credentials", attempts)
	}
	posts := 0
	for _, r := range srv.Requests() {
		if r.Method == "POST" {
			posts++
		}
	}
	if posts != 1 {
		t.Fatalf("%d login attempts; want 1 (unauthorized is not retried)", posts)
	}
	raw, _ := json.Marshal(j)
	if strings.Contains(string(raw), password) || strings.Contains(logs.String(), password) {
		t.Fatalf("password leaked into the job or the logs")
	}
	t.Logf("message: %s", msg)
}
