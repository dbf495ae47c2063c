//go:build linux

package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
	"github.com/bmckit/bmckit/task"
)

// Resume-first (docs/jobs.md, "Order"): a job that has started is finished
// before any other job on its system starts, even one whose CreatedAt is
// earlier because the replica that submitted it has a clock a minute behind.

const (
	rfTestName = "TestResumeFirstAfterSIGKILL"
	rfURL      = "redfish://10.45.0.1/redfish/v1/Systems/1"

	envRFDB    = "BMCKIT_RESUMEFIRST_DB"    // the boltstore file
	envRFOwner = "BMCKIT_RESUMEFIRST_OWNER" // the runner's Owner
	envRFPower = "BMCKIT_RESUMEFIRST_POWER" // the resuming child's fake power state: On or Off
)

// rfSpec is every job's task list: power off, one-time PXE, power on, power
// off.
func rfSpec(url string) job.Spec {
	return job.Spec{BMC: url, CredentialsRef: "lab", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
		{Power: &task.PowerAction{Op: task.PowerOff}},
	}}
}

// rfSkewedClock is a wall clock off by d.
type rfSkewedClock struct{ d time.Duration }

func (c rfSkewedClock) Now() time.Time                         { return time.Now().Add(c.d) }
func (c rfSkewedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// rfCall is one BMC call as a child reports it, tagged with job.Call.
type rfCall struct {
	Job     string `json:"job,omitempty"` // "" for untagged calls (dial, close)
	Task    int    `json:"task"`
	Attempt int    `json:"attempt"`
	Method  string `json:"method"`
	Args    string `json:"args,omitempty"`
}

func (c rfCall) String() string {
	if c.Job == "" {
		return c.Method
	}
	return fmt.Sprintf("%s/%d/%d %s(%s)", c.Job, c.Task, c.Attempt, c.Method, c.Args)
}

func rfCallOf(ctx context.Context, c fake.Call) rfCall {
	rc := rfCall{Method: string(c.Method)}
	if len(c.Args) > 0 {
		rc.Args = fmt.Sprint(c.Args...)
	}
	if call, ok := job.CallFromContext(ctx); ok {
		rc.Job, rc.Task, rc.Attempt = call.Job, call.Task, call.Attempt
	}
	return rc
}

// rfOut writes whole lines to stdout from any goroutine.
var rfOut sync.Mutex

func rfPrint(format string, args ...any) {
	rfOut.Lock()
	defer rfOut.Unlock()
	fmt.Printf(format+"\n", args...)
}

func rfFail(format string, args ...any) {
	rfPrint("error "+format, args...)
	os.Exit(1)
}

func rfRunner(store *boltstore.Store, fleet *fake.Fleet, owner string, clk job.Clock) *job.Runner {
	r, err := job.NewRunner(job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			Credentials:  labCreds,
			Clock:        clk,
			PollInterval: 5 * time.Millisecond,
		}, Owner: owner,
		LeaseDuration: time.Second, ScanInterval: 20 * time.Millisecond,
	})
	if err != nil {
		rfFail("new runner: %v", err)
	}
	return r
}

// rfFirstChild runs job B until its power-on is in flight: the fake's hook
// on that SetPower submits A (through a runner whose clock is a minute
// behind, so A's CreatedAt is earlier than B's) and C, prints "B-ON" and
// blocks until the parent SIGKILLs this process. Every BMC call is printed
// as "call <json>" before it is served.
func rfFirstChild() {
	time.AfterFunc(time.Minute, func() { rfFail("first child was not killed within a minute") })
	store, err := boltstore.Open(os.Getenv(envRFDB), boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		rfFail("open store: %v", err)
	}
	fleet := fake.NewFleet()
	b, err := fleet.AddNew(rfURL, fake.Options{Power: bmc.PowerOn, PowerTransition: 20 * time.Millisecond})
	if err != nil {
		rfFail("fake: %v", err)
	}
	r := rfRunner(store, fleet, os.Getenv(envRFOwner), nil)
	behind := rfRunner(store, fleet, os.Getenv(envRFOwner)+"-behind", rfSkewedClock{-time.Minute}) // never started: it only submits
	var once sync.Once
	b.SetHook(fake.MethodAny, func(ctx context.Context, c fake.Call) error {
		rc := rfCallOf(ctx, c)
		line, _ := json.Marshal(rc)
		rfPrint("call %s", line)
		if rc.Job != "B" || c.Method != fake.MethodSetPower || rc.Args != string(bmc.PowerActionOn) {
			return nil
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil
		}
		if _, err := behind.Submit(context.Background(), "A", rfSpec(rfURL)); err != nil {
			rfFail("submit A: %v", err)
		}
		if _, err := r.Submit(context.Background(), "C", rfSpec(rfURL)); err != nil {
			rfFail("submit C: %v", err)
		}
		rfPrint("B-ON")
		<-ctx.Done() // SIGKILL comes first, unless the lease is lost
		return ctx.Err()
	})
	if _, err := r.Submit(context.Background(), "B", rfSpec(rfURL)); err != nil {
		rfFail("submit B: %v", err)
	}
	if err := r.Start(context.Background()); err != nil {
		rfFail("runner: %v", err)
	}
}

// rfSecondChild resumes on the store the first child left, with a fake in
// the state it left (power-on requested: On or Off per envRFPower, PXE
// override set) and no blocking hook. Once A, B and C completed it prints
// every BMC call as "call <json>" in the order served, then "DONE".
func rfSecondChild() {
	time.AfterFunc(time.Minute, func() { rfFail("second child did not finish within a minute") })
	store, err := boltstore.Open(os.Getenv(envRFDB), boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		rfFail("open store: %v", err)
	}
	power := bmc.PowerOff
	if os.Getenv(envRFPower) == "On" {
		power = bmc.PowerOn
	}
	fleet := fake.NewFleet()
	b, err := fleet.AddNew(rfURL, fake.Options{Power: power, PowerTransition: 20 * time.Millisecond})
	if err != nil {
		rfFail("fake: %v", err)
	}
	b.SetBootOverride(bmc.BootOverride{Device: bmc.BootDevicePXE})
	var mu sync.Mutex
	var calls []rfCall
	b.SetHook(fake.MethodAny, func(ctx context.Context, c fake.Call) error {
		mu.Lock()
		calls = append(calls, rfCallOf(ctx, c))
		mu.Unlock()
		return nil
	})
	r := rfRunner(store, fleet, os.Getenv(envRFOwner), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer wcancel()
	for _, name := range []string{"A", "B", "C"} {
		if _, err := r.Wait(wctx, name); err != nil {
			rfFail("waiting for %s: %v", name, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		rfFail("runner: %v", err)
	}
	if err := store.Close(); err != nil {
		rfFail("close store: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range calls {
		line, _ := json.Marshal(c)
		rfPrint("call %s", line)
	}
	rfPrint("DONE")
}

// rfReadChild collects a child's "call" lines until it prints until (or
// exits, when until is ""), failing on an "error" line or after a minute.
func rfReadChild(t *testing.T, c *childtest.Child, until string) (calls []rfCall, seen bool) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	take := func(l string) {
		switch {
		case strings.HasPrefix(l, "call "):
			var rc rfCall
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(l, "call ")), &rc), "child line %q", l)
			calls = append(calls, rc)
		case strings.HasPrefix(l, "error"):
			t.Fatalf("child: %s", l)
		case l == until:
			seen = true
		}
	}
	for !seen {
		select {
		case l, ok := <-c.Lines():
			if !ok {
				return calls, false
			}
			take(l)
		case <-deadline.C:
			t.Fatalf("no %q from the child within a minute", until)
		}
	}
	return calls, true
}

// rfRuns compresses a call log's tagged calls into the sequence of jobs that
// made them: "B A C" when each job's calls are contiguous.
func rfRuns(calls []rfCall) []string {
	var out []string
	for _, c := range calls {
		if c.Job != "" && (len(out) == 0 || out[len(out)-1] != c.Job) {
			out = append(out, c.Job)
		}
	}
	return out
}

// TestResumeFirstAfterSIGKILL: a runner child runs job B [off, pxe, on, off]
// until B's power-on is in flight, while A (CreatedAt a minute earlier: its
// submitter's clock is behind) and C are submitted for the same system; it
// is SIGKILLed there. A second child over the same boltstore, with the same
// Owner (takes the lock back at once) or another (waits for the 1 s lease),
// must finish B's remaining tasks without re-sending its power-off or PXE,
// then run A, then C, each alone on the system.
func TestResumeFirstAfterSIGKILL(t *testing.T) {
	switch {
	case childtest.IsChild("resume-first-run"):
		rfFirstChild()
		return
	case childtest.IsChild("resume-first-resume"):
		rfSecondChild()
		return
	}
	for _, tc := range []struct {
		name, owner2, power string
	}{
		{"same-owner", "node-a", "Off"}, // the power-on never landed
		{"other-owner", "node-b", "On"}, // it landed just before the kill
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			db := filepath.Join(t.TempDir(), "jobs.db")
			c1 := childtest.Start(t, rfTestName, "resume-first-run", envRFDB+"="+db, envRFOwner+"=node-a")
			first, ok := rfReadChild(t, c1, "B-ON")
			require.True(t, ok, "the first child exited before B's power-on")
			for _, l := range c1.Kill() {
				if strings.HasPrefix(l, "error") {
					t.Fatalf("first child: %s", l)
				}
			}
			killed := time.Now()

			c2 := childtest.Start(t, rfTestName, "resume-first-resume", envRFDB+"="+db, envRFOwner+"="+tc.owner2, envRFPower+"="+tc.power)
			second, ok := rfReadChild(t, c2, "DONE")
			require.True(t, ok, "the second child exited without DONE")
			_, err := c2.Wait()
			require.NoError(t, err, "second child's exit")
			var bRest []rfCall
			for _, c := range second {
				if c.Job == "B" && c.Method != string(fake.MethodPowerState) {
					bRest = append(bRest, c)
				}
			}
			t.Logf("%s: first child killed %v after its start (%d BMC calls, jobs %v); second child (owner %s, power %s) done %v later (%d calls, jobs %v; B's actions %v)",
				tc.name, killed.Sub(began).Round(time.Millisecond), len(first), rfRuns(first), tc.owner2, tc.power,
				time.Since(killed).Round(time.Millisecond), len(second), rfRuns(second), bRest)

			// The first child: only B touched the BMC, up to its power-on.
			assert.Equal(t, []string{"B"}, rfRuns(first), "first child: only B may touch the system")

			// The second child: B's rest, then A, then C, each contiguous.
			assert.Equal(t, []string{"B", "A", "C"}, rfRuns(second), "second child: jobs in the order B, A, C, none interleaved; calls: %v", second)
			for _, c := range second {
				if c.Job == "B" && c.Task < 2 {
					t.Errorf("B's finished task %d was touched again after the restart: %v", c.Task, c)
				}
			}
			bSent := map[int]bool{}
			for _, c := range second {
				if c.Job == "B" {
					bSent[c.Task] = true
				}
			}
			assert.True(t, bSent[3], "B's last power-off ran in the second child")

			store, err := boltstore.Open(db, boltstore.Options{LockTimeout: 10 * time.Second})
			require.NoError(t, err)
			defer store.Close()
			reader, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fake.NewFleet()}})
			require.NoError(t, err)
			jobs := map[string]*job.Job{}
			for _, name := range []string{"A", "B", "C"} {
				j, err := reader.Get(context.Background(), name)
				require.NoError(t, err)
				assertCompleted(t, j, conditions.ResultSucceeded)
				jobs[name] = j
			}
			a, b, c := jobs["A"], jobs["B"], jobs["C"]
			assert.True(t, a.CreatedAt.Before(b.CreatedAt), "A's CreatedAt (%v) is before B's (%v): its submitter's clock was behind", a.CreatedAt, b.CreatedAt)
			assert.Equal(t, 1, b.Status.Tasks[0].Attempts, "B's power-off sent once")
			assert.Equal(t, 1, b.Status.Tasks[1].Attempts, "B's PXE override sent once")
			assert.False(t, a.Status.StartTime.Before(b.Status.CompletionTime.Time), "A started (%v) after B completed (%v)", a.Status.StartTime, b.Status.CompletionTime)
			assert.False(t, c.Status.StartTime.Before(a.Status.CompletionTime.Time), "C started (%v) after A completed (%v)", c.Status.StartTime, a.Status.CompletionTime)
		})
	}
}

// TestSkewedClockCleanStopResumesFirst is the clean-stop version, in one
// process: runner r1 runs B until its power-on is Requested (the read-back
// after it blocks), A is submitted through a replica whose (fake) clock is a
// minute behind, then C; r1 stops cleanly; r2 (another Owner) starts. B must
// complete before A starts, and A must make no BMC call between B's calls.
func TestSkewedClockCleanStopResumesFirst(t *testing.T) {
	store, fleet := memstore.New(), fake.NewFleet()
	url := "redfish://10.45.1.1/redfish/v1/Systems/1"
	// Power changes land 50 ms late, so B's power-on is stored as Requested
	// after its first read-back.
	b, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOn, PowerTransition: 50 * time.Millisecond})
	require.NoError(t, err)
	var mu sync.Mutex
	var calls []rfCall
	requested := make(chan struct{})
	var blocked atomic.Bool
	var reads atomic.Int32
	b.SetHook(fake.MethodAny, func(ctx context.Context, c fake.Call) error {
		rc := rfCallOf(ctx, c)
		mu.Lock()
		calls = append(calls, rc)
		mu.Unlock()
		// B's second read-back after its power-on request (the first found
		// it still off): the task is Requested in the store. Hold it there
		// until r1 stops.
		if rc.Job == "B" && rc.Task == 2 && c.Method == fake.MethodPowerState && reads.Add(1) == 2 && blocked.CompareAndSwap(false, true) {
			close(requested)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	mk := func(owner string, clk job.Clock) *job.Runner {
		r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			Credentials:  labCreds,
			Clock:        clk,
			PollInterval: time.Millisecond,
		}, Owner: owner,
			ScanInterval: 10 * time.Millisecond})
		require.NoError(t, err)
		return r
	}
	r1 := mk("r1", nil)
	behind := mk("behind", clock.NewFake(time.Now().Add(-time.Minute))) // only submits
	ctx1, stop1 := context.WithCancel(context.Background())
	defer stop1()
	done1 := make(chan error, 1)
	go func() { done1 <- r1.Start(ctx1) }()
	_, err = r1.Submit(context.Background(), "B", rfSpec(url))
	require.NoError(t, err)
	recv(t, requested)

	bj, err := r1.Get(context.Background(), "B")
	require.NoError(t, err)
	require.Equal(t, task.PhaseRequested, bj.Status.Tasks[2].Phase, "B's power-on is Requested when A is submitted")
	_, err = behind.Submit(context.Background(), "A", rfSpec(url))
	require.NoError(t, err)
	_, err = r1.Submit(context.Background(), "C", rfSpec(url))
	require.NoError(t, err)

	stop1()
	select {
	case err := <-done1:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("r1 did not stop")
	}
	lock, err := store.List(context.Background(), "bmckit/systems/")
	require.NoError(t, err)
	require.Len(t, lock, 1, "B's system lock is kept after a clean stop")
	assert.Contains(t, string(lock[0].Value), `"holder":"B"`)

	r2 := mk("r2", nil)
	ctx2, stop2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- r2.Start(ctx2) }()
	defer func() { stop2(); <-done2 }()
	jobs := map[string]*job.Job{}
	for _, name := range []string{"A", "B", "C"} {
		jobs[name] = wait(t, r2, name)
		assertCompleted(t, jobs[name], conditions.ResultSucceeded)
	}
	a, bb, c := jobs["A"], jobs["B"], jobs["C"]
	assert.True(t, a.CreatedAt.Before(bb.CreatedAt), "A's CreatedAt is a minute before B's")
	assert.False(t, a.Status.StartTime.Before(bb.Status.CompletionTime.Time), "A started (%v) after B completed (%v)", a.Status.StartTime, bb.Status.CompletionTime)
	assert.False(t, c.Status.StartTime.Before(a.Status.CompletionTime.Time), "C started after A completed")
	for i := range 2 {
		assert.Equal(t, 1, bb.Status.Tasks[i].Attempts, "B's task %d sent once", i)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"B", "A", "C"}, rfRuns(calls), "no job's calls between another's; calls: %v", calls)
}
