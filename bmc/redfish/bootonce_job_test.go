package redfish_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/retry"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// One-time boot on a BMC that stores Once as Continuous
// (redfishtest.BootOnceStoredAsContinuous), over real HTTP: without
// emulation the job re-sets the override MaxVerifyResends times, fails with
// VerificationFailed and puts back the override it found; with emulation
// (per task or per driver) it boots once from PXE and puts the previous
// override back after the boot. Crash/resume between the set and the
// restore goes through the Stepper with a host that drops its in-memory job.

// storedAsContinuous starts the personality with the server On and a
// persistent disk override, set beforehand as an operator would.
func storedAsContinuous(t *testing.T) *redfishtest.Server {
	t.Helper()
	srv := redfishtest.NewServer(redfishtest.Config{BootOnce: redfishtest.BootOnceStoredAsContinuous})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	drv, err := redfish.NewDialer(testOptions()).DialDriver(context.Background(), srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = drv.Close(context.Background()) }()
	if err := drv.SetBootOverride(context.Background(), bmc.BootOverride{Device: bmc.BootDeviceDisk, Persistent: true, Mode: bmc.BootModeUEFI}); err != nil {
		t.Fatal(err)
	}
	srv.ClearRequests()
	return srv
}

func emulated(spec job.Spec, on bool) job.Spec {
	for i := range spec.Tasks {
		if b := spec.Tasks[i].BootDevice; b != nil {
			b.EmulateOnce = &on
		}
	}
	return spec
}

// assertDiskBack checks that the BMC holds the operator's persistent disk
// override again.
func assertDiskBack(t *testing.T, srv *redfishtest.Server) {
	t.Helper()
	if st := srv.System("1"); st.BootTarget != "Hdd" || st.BootEnabled != "Continuous" {
		t.Fatalf("BMC holds %s/%s; want the override found (Hdd/Continuous) back", st.BootTarget, st.BootEnabled)
	}
}

func TestBootOnceStoredAsContinuousWithoutEmulation(t *testing.T) {
	t.Run("runner", func(t *testing.T) {
		srv := storedAsContinuous(t)
		j := runJob(t, netbootSpec(srv.Address("1")), srv.Credentials(), testOptions())
		assertVerificationFailedAndRestored(t, srv, j)
	})
	t.Run("stepper", func(t *testing.T) {
		srv := storedAsContinuous(t)
		clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		h := &crashHost{}
		j := &job.Job{Name: "netboot", CreatedAt: clk.Now(), Spec: netbootSpec(srv.Address("1"))}
		if err := stepAll(t, newRedfishStepper(t, srv, clk), clk, j, h); err != nil {
			t.Fatal(err)
		}
		assertVerificationFailedAndRestored(t, srv, j)
		if br := h.load(t).Status.Tasks[1].BootRestore; br == nil || br.State != task.BootRestoreRestored {
			t.Fatalf("stored boot restore %+v; want Restored", br)
		}
	})
}

func assertVerificationFailedAndRestored(t *testing.T, srv *redfishtest.Server, j *job.Job) {
	t.Helper()
	if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonVerificationFailed {
		t.Fatalf("job %s %s: %s; want Failed VerificationFailed", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	bt := j.Status.Tasks[1]
	if bt.Attempts != 3 {
		t.Errorf("boot task attempts %d; want 3 (the set and MaxVerifyResends=2 re-sets)", bt.Attempts)
	}
	if !strings.Contains(bt.Message, "pxe (persistent") || !strings.Contains(bt.Message, "emulateOnce") {
		t.Errorf("boot task message %q: want the read-back and the hint to emulate", bt.Message)
	}
	if patches := countRequests(srv, "PATCH"); patches != 4 {
		t.Errorf("%d PATCHes; want 4 (3 sets, 1 restore):\n%s", patches, trace(srv.Requests()))
	}
	rec := bt.BootRestore
	if rec == nil || rec.Emulated || rec.State != task.BootRestoreRestored || rec.Previous.Device != "disk" || !rec.Previous.Persistent {
		t.Fatalf("boot restore %+v; want the disk override found, Restored, not emulated", rec)
	}
	assertDiskBack(t, srv)
	if st := srv.System("1"); st.Power != "Off" || st.Boots != 0 {
		t.Fatalf("server %+v; want Off (the job stopped before power on)", st)
	}
}

// bootTargetAtPowerOn records the BMC's boot override at each reset.
type bootTargetAtPowerOn struct {
	mu  sync.Mutex
	srv *redfishtest.Server
	at  []string
}

func (b *bootTargetAtPowerOn) change(c redfishtest.StateChange) {
	if !strings.HasPrefix(c.What, "reset:On") {
		return
	}
	st := b.srv.System(c.System)
	b.mu.Lock()
	b.at = append(b.at, st.BootTarget+"/"+st.BootEnabled)
	b.mu.Unlock()
}

func TestBootOnceEmulatedThroughRunner(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec func(addr string) job.Spec
		opts func() redfish.Options
	}{
		{"per task", func(addr string) job.Spec { return emulated(netbootSpec(addr), true) }, testOptions},
		{"per driver", netbootSpec, func() redfish.Options {
			o := testOptions()
			o.EmulateBootOnce = true
			return o
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &bootTargetAtPowerOn{}
			srv := redfishtest.NewServer(redfishtest.Config{BootOnce: redfishtest.BootOnceStoredAsContinuous, OnStateChange: func(c redfishtest.StateChange) { rec.change(c) }})
			rec.srv = srv
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runJob(t, tc.spec(srv.Address("1")), srv.Credentials(), tc.opts())
			if j.Status.Result != conditions.ResultSucceeded {
				t.Fatalf("job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
			}
			br := j.Status.Tasks[1].BootRestore
			if br == nil || !br.Emulated || br.State != task.BootRestoreRestored || br.Previous.Device != "none" {
				t.Fatalf("boot restore %+v; want emulated, Restored, previous none", br)
			}
			if m := j.Status.Tasks[1].Message; !strings.Contains(m, "pxe (persistent") || !strings.Contains(m, "emulated") {
				t.Errorf("boot task message %q: want the persistent read-back and that emulation was used", m)
			}
			rec.mu.Lock()
			at := append([]string(nil), rec.at...)
			rec.mu.Unlock()
			if len(at) != 1 || at[0] != "Pxe/Continuous" {
				t.Fatalf("override at power on: %v; want [Pxe/Continuous]", at)
			}
			if st := srv.System("1"); st.Power != "On" || st.Boots != 1 || st.BootEnabled != "Disabled" {
				t.Fatalf("server %+v; want On, booted once, the override disabled again", st)
			}
			// The restore follows the power-on and its verification.
			reqs := srv.Requests()
			lastPost, lastPatch := -1, -1
			for i, r := range reqs {
				switch r.Method {
				case "POST":
					if strings.HasSuffix(r.Path, "ComputerSystem.Reset") {
						lastPost = i
					}
				case "PATCH":
					lastPatch = i
				}
			}
			if lastPatch < lastPost+2 {
				t.Fatalf("the restore PATCH (#%d) does not follow the power on (#%d) and its read-back:\n%s", lastPatch, lastPost, trace(reqs))
			}
		})
	}
}

// A job that fails after it changed the override, on a BMC that honours
// Once, puts back what it found: here the power on is refused until the
// task times out.
func TestFailedJobRestoresBootOverride(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "Off")
	drv, err := redfish.NewDialer(testOptions()).DialDriver(context.Background(), srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.SetBootOverride(context.Background(), bmc.BootOverride{Device: bmc.BootDeviceDisk, Persistent: true}); err != nil {
		t.Fatal(err)
	}
	_ = drv.Close(context.Background())
	srv.SetFaults(0, func(method, path string) redfishtest.Fault {
		if method == "POST" && strings.HasSuffix(path, "ComputerSystem.Reset") {
			return redfishtest.Fault500
		}
		return redfishtest.FaultNone
	})
	spec := netbootSpec(srv.Address("1"))
	spec.Tasks = spec.Tasks[1:] // boot pxe once, power on
	spec.Tasks[1].Timeout = task.Duration{Duration: 300 * time.Millisecond}
	j := runJob(t, spec, srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonTimedOut {
		t.Fatalf("job %s %s: %s; want Failed TimedOut", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	br := j.Status.Tasks[0].BootRestore
	if br == nil || br.Emulated || br.State != task.BootRestoreRestored {
		t.Fatalf("boot restore %+v; want Restored", br)
	}
	assertDiskBack(t, srv)
}

// A succeeded job keeps a real one-time override (the BMC clears it at the
// boot): nothing is put back, and nothing is sent for it.
func TestSucceededJobKeepsRealOnce(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, netbootSpec(srv.Address("1")), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s: %s", j.Status.Result, j.Status.Message)
	}
	if br := j.Status.Tasks[1].BootRestore; br == nil || br.State != task.BootRestoreKept {
		t.Fatalf("boot restore %+v; want Kept", br)
	}
	if n := countRequests(srv, "PATCH"); n != 1 {
		t.Fatalf("%d PATCHes; want 1:\n%s", n, trace(srv.Requests()))
	}
}

func countRequests(srv *redfishtest.Server, method string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Method == method {
			n++
		}
	}
	return n
}

// crashHost plays a controller that keeps the job in its own object: persist
// stores a JSON copy; crashAt, when it returns true for a job about to be
// stored, fails that write (once), as a process killed before the write
// would, and the test resumes from the last stored copy with a new Stepper.
type crashHost struct {
	stored  []byte
	crashAt func(j *job.Job) bool
	crashed bool
}

var errCrash = errors.New("simulated crash before this write")

func (h *crashHost) persist(_ context.Context, j *job.Job) error {
	if h.crashAt != nil && !h.crashed && len(j.Status.Tasks) == len(j.Spec.Tasks) && h.crashAt(j) {
		h.crashed = true
		return errCrash
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	h.stored = b
	return nil
}

func (h *crashHost) load(t *testing.T) *job.Job {
	t.Helper()
	var j job.Job
	if err := json.Unmarshal(h.stored, &j); err != nil {
		t.Fatal(err)
	}
	return &j
}

func newRedfishStepper(t *testing.T, srv *redfishtest.Server, clk *clock.Fake) *job.Stepper {
	t.Helper()
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(testOptions()))
	s, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking,
		Dialer:       &dialer,
		Credentials:  bmc.StaticCredentials{"lab": srv.Credentials()},
		Clock:        clk,
		PollInterval: 5 * time.Millisecond,
		Retry:        retry.Policy{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// stepAll steps j until it completes or a persist fails (the crash),
// advancing the fake clock by each RequeueAfter.
func stepAll(t *testing.T, s *job.Stepper, clk *clock.Fake, j *job.Job, h *crashHost) error {
	t.Helper()
	for range 200 {
		res, err := s.Step(context.Background(), j, h.persist)
		if err != nil {
			return err
		}
		if res.Done {
			return nil
		}
		clk.Advance(max(res.RequeueAfter, time.Millisecond))
	}
	t.Fatalf("job not done after 200 steps: %+v", j.Status)
	return nil
}

func TestBootOnceEmulatedCrashResumeThroughStepper(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crashAt func(j *job.Job) bool
		// holdsAtCrash is the override the BMC holds when the host dies.
		holdsAtCrash string
		// restoreMsg is in the restore's message after the resume.
		restoreMsg string
	}{
		{
			// The PATCH went out; the boot task's result was never stored.
			name:         "after the set",
			crashAt:      func(j *job.Job) bool { return j.Status.Tasks[1].Phase == task.PhaseDone },
			holdsAtCrash: "Pxe/Continuous",
			restoreMsg:   "put back disk (persistent",
		},
		{
			// Powered on (the boot it was for); the result was never stored.
			name:         "after the boot, before the restore",
			crashAt:      func(j *job.Job) bool { return j.Status.Tasks[2].Phase == task.PhaseDone },
			holdsAtCrash: "Pxe/Continuous",
			restoreMsg:   "put back disk (persistent",
		},
		{
			// Put back; the outcome was never stored: the resumed job finds
			// the override as found and sends nothing.
			name: "after the restore",
			crashAt: func(j *job.Job) bool {
				br := j.Status.Tasks[1].BootRestore
				return br != nil && br.State == task.BootRestoreRestored
			},
			holdsAtCrash: "Hdd/Continuous",
			restoreMsg:   "nothing to put back",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := storedAsContinuous(t)
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			spec := emulated(netbootSpec(srv.Address("1")), true)
			// A task after the power on, so the restore happens mid-job.
			spec.Tasks = append(spec.Tasks, task.Spec{PowerStatus: &task.PowerStatusAction{}})
			h := &crashHost{crashAt: tc.crashAt}
			j := &job.Job{Name: "netboot", CreatedAt: clk.Now(), Spec: spec}
			if err := h.persist(context.Background(), j); err != nil {
				t.Fatal(err)
			}
			if err := stepAll(t, newRedfishStepper(t, srv, clk), clk, j, h); !errors.Is(err, errCrash) {
				t.Fatalf("first run: %v; want the simulated crash", err)
			}
			if st := srv.System("1"); st.BootTarget+"/"+st.BootEnabled != tc.holdsAtCrash {
				t.Fatalf("BMC holds %s/%s at the crash; want %s", st.BootTarget, st.BootEnabled, tc.holdsAtCrash)
			}
			// A new process: a new Stepper (new session), the stored job.
			j = h.load(t)
			if br := j.Status.Tasks[1].BootRestore; br == nil || br.State != task.BootRestorePending || br.Previous.Device != "disk" {
				t.Fatalf("stored boot restore %+v; want Pending with the disk override found", br)
			}
			if err := stepAll(t, newRedfishStepper(t, srv, clk), clk, j, h); err != nil {
				t.Fatal(err)
			}
			if j.Status.Result != conditions.ResultSucceeded {
				t.Fatalf("resumed job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
			}
			br := j.Status.Tasks[1].BootRestore
			if br == nil || !br.Emulated || br.State != task.BootRestoreRestored || !strings.Contains(br.Message, tc.restoreMsg) {
				t.Fatalf("boot restore %+v; want emulated, Restored, message with %q", br, tc.restoreMsg)
			}
			assertDiskBack(t, srv)
			if st := srv.System("1"); st.Power != "On" || st.Boots != 1 {
				t.Fatalf("server %+v; want On, booted once", st)
			}
			if h.load(t).Status.Tasks[1].BootRestore.State != task.BootRestoreRestored {
				t.Fatal("the restore's outcome was not stored")
			}
		})
	}
}

// A BMC that ignores one-time overrides: the job fails VerificationFailed
// with a hint naming every way to emulate one-time boot, the address
// option ?bootOnce=emulate included.
func TestBootOnceIgnoredJobHint(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{BootOnce: redfishtest.BootOnceIgnored})
	t.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	j := runJob(t, netbootSpec(srv.Address("1")), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultFailed || j.Status.Reason != conditions.ReasonVerificationFailed {
		t.Fatalf("job %s %s: %s; want Failed VerificationFailed", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
	msg := j.Status.Tasks[1].Message
	for _, want := range []string{"ignores or reverts one-time overrides", "?bootOnce=emulate", "emulateOnce", "EmulateBootOnce"} {
		if !strings.Contains(msg, want) {
			t.Errorf("boot task message %q does not mention %q", msg, want)
		}
	}
	// With the address option the same BMC runs the job.
	srv.SetPower("1", "On")
	j = runJob(t, netbootSpec(srv.Address("1")+"?bootOnce=emulate"), srv.Credentials(), testOptions())
	if j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("with ?bootOnce=emulate: job %s %s: %s", j.Status.Result, j.Status.Reason, j.Status.Message)
	}
}
