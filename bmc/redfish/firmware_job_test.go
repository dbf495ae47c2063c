package redfish_test

// firmwareUpdate tasks through job.Runner and the Redfish driver against
// redfishtest's UpdateService and TaskService, over HTTP.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/task"
)

func runFirmwareJob(t *testing.T, srv *redfishtest.Server, spec job.Spec) *job.Job {
	t.Helper()
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(testOptions()))
	return jobtest.Run(t, job.Config{
		StepperConfig: job.StepperConfig{
			Dialer:           &dialer,
			PollInterval:     5 * time.Millisecond,
			SlowPollInterval: 20 * time.Millisecond,
			Retry:            retry.Policy{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond, Jitter: 0.2},
			Logger:           testr.New(t),
		},
		ScanInterval: 20 * time.Millisecond,
	}, srv.Credentials(), spec, 2*time.Minute)
}

func TestFirmwareUpdateJob(t *testing.T) {
	img := imageServer(t)
	for _, c := range []struct {
		name      string
		cfg       redfishtest.FirmwareConfig
		component string
		resets    int
	}{
		{"simple update", redfishtest.FirmwareConfig{Duration: 200 * time.Millisecond}, "BIOS", 0},
		{"activate at the system's boot", redfishtest.FirmwareConfig{Duration: 200 * time.Millisecond, ActivateOnReset: true}, "BIOS", 1},
		{"BMC firmware, activate at the BMC's reset", redfishtest.FirmwareConfig{Duration: 200 * time.Millisecond, ActivateOnReset: true}, "BMC", 1},
		{"multipart push", redfishtest.FirmwareConfig{Duration: 200 * time.Millisecond, Push: redfishtest.FirmwareMultipartPush}, "BIOS", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redfishtest.NewServer(redfishtest.Config{Firmware: c.cfg, PowerDelay: 50 * time.Millisecond})
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runFirmwareJob(t, srv, oneTask(srv, task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{
				ImageURI: imageOf(img, c.component, "2.1").URI, Component: c.component, Version: "2.1"}}))
			requireSucceeded(t, j)
			if got := len(srv.FirmwareTasks()); got != 1 {
				t.Errorf("%d update tasks on the BMC, want 1", got)
			}
			if v := srv.FirmwareVersion(c.component); v != "2.1" {
				t.Errorf("%s at %q, want 2.1", c.component, v)
			}
			fs := j.Status.Tasks[0].Firmware
			if (fs.ResetTime != nil) != (c.resets == 1) {
				t.Errorf("reset sent: %v, want %d resets", fs.ResetTime, c.resets)
			}
		})
	}
}

// The Stepper path (a controller), on a fake clock, with a crash right
// before the write that would store the BMC task: the resumed job finds the
// update among the BMC's tasks and follows it; the BMC ran one update.
func TestFirmwareUpdateStepperCrashBeforeTheTaskIsStored(t *testing.T) {
	img := imageServer(t)
	for _, push := range []redfishtest.FirmwarePush{redfishtest.FirmwareSimpleUpdate, redfishtest.FirmwareMultipartPush} {
		t.Run(fmt.Sprint(push), func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
			srv := redfishtest.NewServer(redfishtest.Config{Clock: clk, PowerDelay: 2 * time.Second,
				Firmware: redfishtest.FirmwareConfig{Push: push, Duration: 10 * time.Minute, ActivateOnReset: true}})
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			s := newRedfishStepper(t, srv, clk)
			h := &crashHost{crashAt: func(j *job.Job) bool {
				fs := j.Status.Tasks[0].Firmware
				return fs != nil && fs.TaskURI != ""
			}}
			j := &job.Job{Name: "fw", Generation: 1, CreatedAt: clk.Now(), Spec: oneTask(srv, task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{
				ImageURI: imageOf(img, "BIOS", "2.1").URI, Component: "BIOS", Version: "2.1"}})}
			if err := stepAll(t, s, clk, j, h); !errors.Is(err, errCrash) {
				t.Fatalf("want the crash, got %v", err)
			}
			if n := len(srv.FirmwareTasks()); n != 1 {
				t.Fatalf("%d update tasks before the resume, want 1", n)
			}
			resumed := h.load(t)
			if fs := resumed.Status.Tasks[0].Firmware; fs != nil && fs.TaskURI != "" {
				t.Fatalf("the BMC task was stored: %+v", fs)
			}
			if err := stepAll(t, s, clk, resumed, h); err != nil {
				t.Fatal(err)
			}
			requireSucceeded(t, resumed)
			if n := len(srv.FirmwareTasks()); n != 1 {
				t.Errorf("%d update tasks, want 1 (no second update)", n)
			}
			if v := srv.FirmwareVersion("BIOS"); v != "2.1" {
				t.Errorf("BIOS at %q", v)
			}
		})
	}
}

// A crash after the reset the BMC asked for was sent and before it was
// stored: the resumed task finds the system's last reset time moved and
// does not reset again. A BMC that does not report it gets the reset again
// (at least once): redfishtest keeps the task's AwaitToActivate message
// after the activation, as BMCs do, so only the time tells.
func TestFirmwareUpdateResetNotSentTwiceAfterACrash(t *testing.T) {
	img := imageServer(t)
	for _, c := range []struct {
		name   string
		noTime bool
		resets int
	}{{"last reset time reported", false, 1}, {"not reported", true, 2}} {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
			srv := redfishtest.NewServer(redfishtest.Config{Clock: clk, PowerDelay: time.Second, NoLastResetTime: c.noTime,
				Firmware: redfishtest.FirmwareConfig{Duration: time.Minute, ActivateOnReset: true}})
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			s := newRedfishStepper(t, srv, clk)
			h := &crashHost{crashAt: func(j *job.Job) bool {
				fs := j.Status.Tasks[0].Firmware
				return fs != nil && fs.ResetTime != nil // the reset was sent; its record is lost
			}}
			j := &job.Job{Name: "fw", Generation: 1, CreatedAt: clk.Now(), Spec: oneTask(srv, task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{
				ImageURI: imageOf(img, "BIOS", "2.1").URI, Component: "BIOS", Version: "2.1"}})}
			if err := stepAll(t, s, clk, j, h); !errors.Is(err, errCrash) {
				t.Fatalf("want the crash, got %v", err)
			}
			clk.Advance(5 * time.Second) // the cycle lands while the runner is down
			resumed := h.load(t)
			if err := stepAll(t, s, clk, resumed, h); err != nil {
				t.Fatal(err)
			}
			requireSucceeded(t, resumed)
			if got := srv.System("1").Resets["PowerCycle"]; got != c.resets {
				t.Errorf("%d power cycles, want %d", got, c.resets)
			}
		})
	}
}

// A fresh firmwareUpdate task whose component is already at the version
// reads it and sends no update (issue 34: Gigabyte/AMI, DL325, EX235a and
// the DMTF mockup were re-flashed), on each vendor personality that
// updates firmware: 0 update requests on the wire, Succeeded.
func TestFirmwareUpdateJobAtTheVersionSendsNothing(t *testing.T) {
	img := imageServer(t)
	for _, v := range append(redfishtest.Vendors(), "default") {
		t.Run(string(v), func(t *testing.T) {
			cfg := redfishtest.Config{}
			if v != "default" {
				cfg = redfishtest.VendorConfig(v)
			}
			if cfg.Firmware.Push == redfishtest.FirmwareNone {
				t.Skipf("%s offers no firmware update", v)
			}
			cfg.Firmware.Components = map[string]string{"BIOS": "2.1", "BMC": "1.0.0"}
			srv := redfishtest.NewServer(cfg)
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runFirmwareJob(t, srv, oneTask(srv, task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{
				ImageURI: imageOf(img, "BIOS", "2.1").URI, Component: "BIOS", Version: "2.1"}}))
			requireSucceeded(t, j)
			for _, r := range srv.Requests() {
				if r.Method == "POST" && !strings.Contains(r.Path, "/SessionService/") {
					t.Errorf("an update request reached the BMC: %s %s", r.Method, r.Path)
				}
			}
			if n := len(srv.FirmwareTasks()); n != 0 {
				t.Errorf("%d updates on the BMC, want 0", n)
			}
		})
	}
}
