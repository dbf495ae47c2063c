package ipmi_test

// Jobs with the read-only tasks, UEFI HTTP boot and a BMC reset, through
// job.Runner and the IPMI driver against go-ipmi's simulator and ipmi_sim.

import (
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/task"
)

// runIPMIJob runs tasks against addr through a Runner with an IPMI dialer.
func runIPMIJob(t *testing.T, opts ipmi.Options, addr string, creds bmc.Credentials, tasks ...task.Spec) *job.Job {
	t.Helper()
	var dialers bmc.SchemeDialer
	dialers.Register("ipmi", dialer(t, opts))
	return jobtest.Run(t, job.Config{
		StepperConfig: job.StepperConfig{
			Dialer:       &dialers,
			PollInterval: 20 * time.Millisecond,
			Retry:        retry.Policy{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Jitter: 0.2},
		}, ScanInterval: 50 * time.Millisecond,
	}, creds, job.Spec{BMC: addr, CredentialsRef: "lab", Tasks: tasks}, time.Minute)
}

func wantFailed(t *testing.T, j *job.Job, reason, msg string) {
	t.Helper()
	if j.Status.Result != conditions.ResultFailed || j.Status.Reason != reason || !strings.Contains(j.Status.Message, msg) {
		t.Fatalf("job %s (%s): %s; want Failed (%s) with %q", j.Status.Result, j.Status.Reason, j.Status.Message, reason, msg)
	}
}

var httpBootTask = task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http://10.0.0.1/ipxe.efi"}}

// IPMI has no UEFI HTTP boot: the task fails with reason NotSupported
// before a request, and the job stops there.
func TestHTTPBootJobNotSupportedGoIPMI(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	j := runIPMIJob(t, ipmi.Options{RequestsPerSecond: -1}, sim.URL(), sim.Credentials,
		httpBootTask, task.Spec{Power: &task.PowerAction{Op: task.PowerOn}})
	wantFailed(t, j, conditions.ReasonNotSupported, "IPMI has no UEFI HTTP boot selector")
	if sim.Chassis().PoweredOn() || sim.Chassis().BootFlags().BootFlagsValid {
		t.Fatalf("the job went on: powered on %t, boot flags %+v", sim.Chassis().PoweredOn(), sim.Chassis().BootFlags())
	}
}

func TestHTTPBootAndBMCResetJobsNotSupportedOpenIPMI(t *testing.T) {
	t.Parallel()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	j := runIPMIJob(t, unlimited(sim.DialOptions()), sim.Endpoint.String(), sim.Credentials, httpBootTask)
	wantFailed(t, j, conditions.ReasonNotSupported, "IPMI has no UEFI HTTP boot selector")
	// ipmi_sim refuses the BMC's own Cold Reset.
	j = runIPMIJob(t, unlimited(sim.DialOptions()), sim.Endpoint.String(), sim.Credentials,
		task.Spec{BMCReset: &task.BMCResetAction{Type: task.BMCResetCold}})
	wantFailed(t, j, conditions.ReasonNotSupported, "task 1 (reset BMC (cold)) failed")
	// The read-only tasks work there.
	j = runIPMIJob(t, unlimited(sim.DialOptions()), sim.Endpoint.String(), sim.Credentials,
		task.Spec{Reachable: &task.ReachableAction{}}, task.Spec{PowerStatus: &task.PowerStatusAction{}})
	if j.Status.Result != conditions.ResultSucceeded || j.Status.Tasks[1].PowerState != "Off" {
		t.Fatalf("job %s: %s; power status %q, want Off", j.Status.Result, j.Status.Message, j.Status.Tasks[1].PowerState)
	}
}

// powerStatus and reachable: one IPMI session for both, one Get Chassis
// Status each beyond the session's own handshake.
func TestReadOnlyTasksGoIPMI(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{PoweredOn: true})
	opts := ipmi.Options{RequestsPerSecond: -1}
	one := runIPMIJob(t, opts, sim.URL(), sim.Credentials, task.Spec{PowerStatus: &task.PowerStatusAction{}})
	two := runIPMIJob(t, opts, sim.URL(), sim.Credentials, task.Spec{Reachable: &task.ReachableAction{}}, task.Spec{PowerStatus: &task.PowerStatusAction{}})
	for _, j := range []*job.Job{one, two} {
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
		}
		if w := j.Status.Wire; w == nil || w.Logins != 1 {
			t.Fatalf("wire %+v: want one session", j.Status.Wire)
		}
		for i, ts := range j.Status.Tasks {
			if ts.PowerState != "On" {
				t.Fatalf("task %d read power %q, want On", i, ts.PowerState)
			}
		}
	}
	if d := two.Status.Wire.Requests - one.Status.Wire.Requests; d != 1 {
		t.Fatalf("a second read-only task cost %d requests (%d vs %d); want 1", d, two.Status.Wire.Requests, one.Status.Wire.Requests)
	}
}

// The simulator drops every packet for a while after a Cold Reset; the
// task completes once it answers again, and the server's power is untouched.
func TestBMCResetJobGoIPMI(t *testing.T) {
	t.Parallel()
	const downtime = 400 * time.Millisecond
	sim := ipmitest.NewServer(t, ipmitest.Options{PoweredOn: true, BMCResetDowntime: downtime})
	start := time.Now()
	j := runIPMIJob(t, ipmi.Options{RequestsPerSecond: -1, Timeout: 100 * time.Millisecond, Retries: -1}, sim.URL(), sim.Credentials,
		task.Spec{BMCReset: &task.BMCResetAction{Type: task.BMCResetCold}}, task.Spec{PowerStatus: &task.PowerStatusAction{}})
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s (%s): %s", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	c := sim.Chassis().Counts()
	if c.BMCColdResets != 1 || c.BMCWarmResets != 0 || c.PowerCycles+c.HardResets+c.SoftOffs != 0 {
		t.Fatalf("simulator counts %+v; want one BMC cold reset and nothing else", c)
	}
	if !sim.Chassis().PoweredOn() || j.Status.Tasks[1].PowerState != "On" {
		t.Fatalf("power after a BMC reset: %t, read %q", sim.Chassis().PoweredOn(), j.Status.Tasks[1].PowerState)
	}
	ts := j.Status.Tasks[0]
	if waited := ts.CompletionTime.Sub(ts.RequestTime.Time); waited < downtime-50*time.Millisecond {
		t.Fatalf("the reset task completed %s after the reset, before the BMC answered again (%s down)", waited, downtime)
	}
	t.Logf("job took %s; %s; wire %+v", time.Since(start).Round(time.Millisecond), ts.Message, j.Status.Wire)
}

// An inventory task over IPMI: the FRU's board and product and the BMC's
// firmware in the task's status, the sections IPMI cannot report listed as
// unsupported; a bios task fails NotSupported. Against both simulators.
func TestInventoryAndBIOSJobs(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, opts ipmi.Options, addr string, creds bmc.Credentials) {
		t.Helper()
		j := runIPMIJob(t, opts, addr, creds, task.Spec{Inventory: &task.InventoryAction{}})
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("inventory job %s: %s", j.Status.Result, j.Status.Message)
		}
		inv := j.Status.Tasks[0].Inventory
		if inv == nil || inv.Board.SerialNumber != testBoard.SerialNumber || inv.System.SerialNumber != testProduct.SerialNumber {
			t.Fatalf("inventory %+v, want board %+v and product %+v", inv, testBoard, testProduct)
		}
		if len(inv.Unsupported) == 0 {
			t.Errorf("no section listed as unsupported: %+v", inv)
		}
		j = runIPMIJob(t, opts, addr, creds, task.Spec{BIOS: &task.BIOSAction{}})
		wantFailed(t, j, conditions.ReasonNotSupported, "task 1 (read BIOS settings) failed")
	}
	t.Run("go-ipmi", func(t *testing.T) {
		sim := ipmitest.NewServer(t, ipmitest.Options{FRU: testFRU})
		check(t, ipmi.Options{RequestsPerSecond: -1}, sim.URL(), sim.Credentials)
	})
	t.Run("ipmi_sim", func(t *testing.T) {
		sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{FRU: testFRU})
		check(t, unlimited(sim.DialOptions()), sim.Endpoint.String(), sim.Credentials)
	})
}
