//go:build linux

package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

const (
	envWFBJob    = "BMCKIT_WFBKILL_JOB"  // the job file (the host's object)
	envWFBDB     = "BMCKIT_WFBKILL_DB"   // the tracker's boltstore file
	envWFBStopAt = "BMCKIT_WFBKILL_STOP" // "<try> <step>": stop for good right after storing it; "<try> <step> unstored": right before
	envWFBNow    = "BMCKIT_WFBKILL_NOW"  // the fake clock's start, Unix nanoseconds
	envWFBUser   = "BMCKIT_WFBKILL_USER" // simulator credentials
	envWFBPass   = "BMCKIT_WFBKILL_PASS" //
	wfbSystem    = "1"
)

// TestWaitForBootRetrySIGKILL: a process stepping a job whose wait-for-boot
// task retries is SIGKILLed twice between tries (once right after try 1's
// timeout and try 2's backoff were stored, once right after try 2 set the
// boot override again and stored the power cycle's intent), each time with
// nothing sent after the write. The BMC (a Redfish simulator in this
// process), the job (a file, as a host's object) and the boot records (a
// boltstore file) outlive the children. The third child finishes: try 2
// boots. The BMC must have seen the override set exactly twice (the job's
// bootDevice task and try 2, not again after the kill) and exactly one power
// on and one power cycle.
//
// A third kill comes after the BMC accepted try 2's power cycle and before
// its result was stored (issue 22: each such kill cost an extra power cycle,
// 7 of 7). The system's LastResetTime, stored with the cycle's intent, has
// moved when the next child resumes: it does not cycle again. A BMC that
// does not report LastResetTime gets the cycle again (at least once).
func TestWaitForBootRetrySIGKILL(t *testing.T) {
	if childtest.IsChild("wfb-kill") {
		wfbKillChild()
		return
	}
	for _, c := range []struct {
		name   string
		cfg    redfishtest.Config
		cycles int
	}{
		{"LastResetTime", redfishtest.Config{}, 1},
		{"NoLastResetTime", redfishtest.Config{NoLastResetTime: true}, 2},
	} {
		t.Logf("== %s", c.name)
		resets := wfbKillRun(t, c.cfg)
		if len(resets) != 1+c.cycles || !strings.Contains(resets[0], `"On"`) {
			t.Fatalf("%s: resets %q: want one power on, then %d power cycle(s)", c.name, resets, c.cycles)
		}
		for _, r := range resets[1:] {
			if strings.Contains(r, `"On"`) {
				t.Fatalf("%s: resets %q: want one power on, then %d power cycle(s)", c.name, resets, c.cycles)
			}
		}
	}
}

// wfbKillRun runs TestWaitForBootRetrySIGKILL's children against a
// simulator with cfg and returns the reset requests it received.
func wfbKillRun(t *testing.T, cfg redfishtest.Config) []string {
	t.Helper()
	sim := redfishtest.NewServer(cfg)
	defer sim.Close()
	sim.SetPower(wfbSystem, "Off")
	dir := t.TempDir()
	jobFile, db := filepath.Join(dir, "job.json"), filepath.Join(dir, "boot.db")
	j := &job.Job{Name: "wfb", Generation: 1, CreatedAt: t0, Spec: job.Spec{
		BMC: sim.Address(wfbSystem), CredentialsRef: "sim", SystemUUID: redfishtest.SystemUUID(1),
		Tasks: []task.Spec{pxeOnce, powerOn, retryWait(2)},
	}}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jobFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	creds := sim.Credentials()
	now := t0
	for _, stop := range []string{"2 " + string(task.BootTryBackoff), "2 " + string(task.BootTryPowerCycling), "2 " + string(task.BootTryWaiting) + " unstored", ""} {
		c := childtest.Start(t, t.Name(), "wfb-kill", envWFBJob+"="+jobFile, envWFBDB+"="+db, envWFBStopAt+"="+stop,
			envWFBNow+"="+strconv.FormatInt(now.UnixNano(), 10), envWFBUser+"="+creds.Username, envWFBPass+"="+creds.Password)
		deadline := time.After(time.Minute)
		var ended bool
		for !ended {
			select {
			case l, ok := <-c.Lines():
				if !ok {
					t.Fatalf("child (stop at %q) exited early", stop)
				}
				switch {
				case strings.HasPrefix(l, "NOW "):
					n, _ := strconv.ParseInt(strings.TrimPrefix(l, "NOW "), 10, 64)
					now = time.Unix(0, n).UTC()
				case l == "STOPPED":
					c.Kill()
					ended = true
				case l == "DONE":
					if _, err := c.Wait(); err != nil {
						t.Fatalf("last child: %v", err)
					}
					ended = true
				case strings.HasPrefix(l, "FAIL"):
					t.Fatal(l)
				}
			case <-deadline:
				t.Fatalf("child (stop at %q) did not get there within a minute", stop)
			}
		}
		t.Logf("child stopped at %q, clock %s", stop, now.Format(time.RFC3339))
	}

	b, err = os.ReadFile(jobFile)
	if err != nil {
		t.Fatal(err)
	}
	var got job.Job
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s %s: %s", got.Status.Result, got.Status.Reason, got.Status.Message)
	}
	tries := got.Status.Tasks[2].BootTries
	if len(tries) != 2 || tries[0].Stage != bootstate.ReasonIPXETimeout || tries[1].Result != conditions.ResultSucceeded || tries[1].OverrideTime == nil || tries[1].PowerCycleTime == nil {
		t.Fatalf("tries: %+v", tries)
	}
	var overrides, resets []string
	for _, r := range sim.Requests() {
		switch {
		case r.Method == "PATCH" && strings.HasSuffix(r.Path, "/Systems/"+wfbSystem) && strings.Contains(r.Body, "Boot"):
			overrides = append(overrides, r.Body)
		case r.Method == "POST" && strings.HasSuffix(r.Path, "ComputerSystem.Reset"):
			resets = append(resets, r.Body)
		}
	}
	if len(overrides) != 2 {
		t.Fatalf("boot override set %d times, want 2 (the task, then try 2 once): %q", len(overrides), overrides)
	}
	return resets
}

// wfbKillChild steps the job from the job file until it stores the step
// named by envWFBStopAt (then it prints STOPPED and waits to be killed,
// having sent nothing after that write) or the job completes. It plays the
// server too: once try 2 waits, the server boots (iPXE fetch and callback).
func wfbKillChild() {
	fail := func(format string, args ...any) {
		fmt.Printf("FAIL "+format+"\n", args...)
		os.Exit(1)
	}
	ctx := context.Background()
	n, _ := strconv.ParseInt(os.Getenv(envWFBNow), 10, 64)
	clk := clock.NewFake(time.Unix(0, n).UTC())
	store, err := boltstore.Open(os.Getenv(envWFBDB), boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fail("open store: %v", err)
	}
	tr, err := bootstate.NewTracker(bootstate.Config{Store: store, Clock: clk, InsecureSkipAuth: true})
	if err != nil {
		fail("tracker: %v", err)
	}
	dialer := &bmc.SchemeDialer{}
	dialer.Register("redfish", redfish.NewDialer(redfish.Options{}))
	s, err := job.NewStepper(job.StepperConfig{Locks: syslock.NoLocking,
		Dialer: dialer, Clock: clk, Boot: tr, BootPollInterval: 20 * time.Second,
		Credentials: bmc.StaticCredentials{"sim": {Username: os.Getenv(envWFBUser), Password: os.Getenv(envWFBPass)}},
	})
	if err != nil {
		fail("stepper: %v", err)
	}
	path, stopAt := os.Getenv(envWFBJob), os.Getenv(envWFBStopAt)
	stepOf := func(j *job.Job) string {
		if ts := j.Status.Tasks; len(ts) == 3 && len(ts[2].BootTries) > 0 {
			last := ts[2].BootTries[len(ts[2].BootTries)-1]
			return fmt.Sprintf("%d %s", last.Try, last.Step)
		}
		return ""
	}
	persist := func(_ context.Context, j *job.Job) error {
		if stepOf(j)+" unstored" == stopAt {
			fmt.Println("STOPPED")
			select {} // killed here: what was sent before this write, but not the write
		}
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		tmp := path + ".tmp"
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		if _, err := f.Write(b); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		_ = f.Close()
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
		fmt.Printf("NOW %d\n", clk.Now().UnixNano())
		if stepOf(j) == stopAt {
			fmt.Println("STOPPED")
			select {} // killed here: nothing after this write is sent
		}
		return nil
	}
	for range 500 {
		b, err := os.ReadFile(path)
		if err != nil {
			fail("read job: %v", err)
		}
		var j job.Job
		if err := json.Unmarshal(b, &j); err != nil {
			fail("decode job: %v", err)
		}
		if ts := j.Status.Tasks; len(ts) == 3 && len(ts[2].BootTries) == 2 && ts[2].BootTries[1].Step == task.BootTryWaiting {
			for _, sig := range []string{bootstate.SignalIPXEScriptFetched, bootstate.SignalBootStateReceived} {
				if _, err := tr.RecordSignal(ctx, j.Spec.SystemUUID, ts[2].BootTries[1].AttemptID, sig, ""); err != nil {
					fail("signal: %v", err)
				}
			}
		}
		res, err := s.Step(ctx, &j, persist)
		if err != nil {
			fail("step: %v", err)
		}
		if res.Done {
			fmt.Println("DONE")
			os.Exit(0)
		}
		clk.Advance(res.RequeueAfter)
	}
	fail("not done after 500 steps")
}
