package redfish_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/task"
)

// stateChanging lists the requests that could change the server: every
// one but reads and the session's own login and logout.
func stateChanging(srv *redfishtest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Method == "GET" || strings.HasPrefix(r.Path, "/redfish/v1/SessionService/Sessions") {
			continue
		}
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// A job that cannot finish does not start (issue 34): the netboot job
// (power off, PXE once UEFI, power on) on systems whose Boot has no mode
// (iLO 5 on Apollo) or no override (Cray EX) ends NotSupported at the
// boot task before its first effect: 0 state-changing requests reached
// the BMC and the server is still on. Where the Boot takes it, it runs.
func TestNetbootJobThatCannotFinishDoesNotStart(t *testing.T) {
	for _, tc := range []struct {
		vendor redfishtest.Vendor
		lacks  string // "" when the job can finish
	}{
		{redfishtest.VendorILO5Apollo, "no BootSourceOverrideMode"},
		{redfishtest.VendorCrayEX, "no boot override"},
		{redfishtest.VendorAMIMegaRAC, ""},
	} {
		t.Run(string(tc.vendor), func(t *testing.T) {
			t.Parallel()
			cfg := redfishtest.VendorConfig(tc.vendor)
			cfg.PowerDelay = 20 * time.Millisecond
			srv := redfishtest.NewServer(cfg)
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runJob(t, jobtest.Netboot(srv.Address("1"), task.BootModeUEFI, 20*time.Second), srv.Credentials(), testOptions())
			if tc.lacks == "" {
				if j.Status.Result != conditions.ResultSucceeded {
					t.Fatalf("job %s (%s): %s", j.Status.Result, j.Status.Reason, j.Status.Message)
				}
				return
			}
			if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonNotSupported {
				t.Fatalf("job %s (%s): %s; want Failed NotSupported", j.Status.Result, j.Status.Reason, j.Status.Message)
			}
			for _, want := range []string{"task 2 (", tc.lacks, "the job sent nothing"} {
				if !strings.Contains(j.Status.Message, want) {
					t.Errorf("job message %q does not say %q", j.Status.Message, want)
				}
			}
			if sent := stateChanging(srv); len(sent) != 0 {
				t.Fatalf("state-changing requests reached the BMC: %v", sent)
			}
			if st := srv.System("1"); st.Power != "On" {
				t.Fatalf("server %s after the refused job; want it left On", st.Power)
			}
			if got := j.Status.Tasks[1]; got.Reason != conditions.ReasonNotSupported || got.Result != conditions.ResultFailed {
				t.Errorf("task 2: %s %s; want Failed NotSupported (the task that cannot run)", got.Result, got.Reason)
			}
			if got := j.Status.Tasks[0]; got.Reason != conditions.ReasonSkipped || !strings.HasPrefix(got.Message, "not run") {
				t.Errorf("task 1: %s %q; want Skipped, not run", got.Reason, got.Message)
			}

			// SkipPreflight: the job finds out by trying, after powering
			// the server off (what the check prevents).
			srv.SetPower("1", "On")
			spec := jobtest.Netboot(srv.Address("1"), task.BootModeUEFI, 20*time.Second)
			spec.SkipPreflight = true
			j = runJob(t, spec, srv.Credentials(), testOptions())
			if j.Status.Reason != conditions.ReasonNotSupported || srv.System("1").Power != "Off" {
				t.Fatalf("with SkipPreflight: job %s (%s), server %s; want NotSupported at task 2 with the server off", j.Status.Result, j.Status.Reason, srv.System("1").Power)
			}
		})
	}
}

// A system that reports no PowerState (iLO 6 1.70 style, docs/vendors.md)
// cannot have a power task verified: a job that sets the boot device and
// then powers on is refused before the PATCH, naming the power task.
func TestPreflightNoPowerStateRefusesBeforeTheBootOverride(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{NoPowerState: true})
	t.Cleanup(srv.Close)
	spec := jobtest.Netboot(srv.Address("1"), "", 20*time.Second)
	spec.Tasks = spec.Tasks[1:] // PXE once, power on
	j := runJob(t, spec, srv.Credentials(), testOptions())
	if j.Status.Reason != conditions.ReasonNotSupported || !strings.Contains(j.Status.Message, "task 2 (") ||
		!strings.Contains(j.Status.Message, "no PowerState") {
		t.Fatalf("job %s (%s): %s; want NotSupported at task 2 naming the missing PowerState", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	if sent := stateChanging(srv); len(sent) != 0 {
		t.Fatalf("state-changing requests reached the BMC: %v", sent)
	}
}
