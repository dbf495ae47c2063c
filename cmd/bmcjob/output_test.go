package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/clock"
)

// buildBMCJob builds the command into a temporary directory.
func buildBMCJob(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bmcjob")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// bmcjob run -simulate -json -spec ... | python3 -m json.tool: standard
// output is one JSON document that another program parses; the progress
// went to standard error. The same for a one-shot command with -json.
func TestJSONOutputPipesIntoPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	bin := buildBMCJob(t)
	for _, args := range [][]string{
		{"run", "-simulate", "-simulate-power-delay", "0", "-json", "-spec", "specs/netboot.json"},
		{"power", "status", "-simulate", "-json"},
	} {
		t.Run(args[0], func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var progress, parsed, pyErr bytes.Buffer
			job := exec.Command(bin, args...)
			job.Stdout, job.Stderr = w, &progress
			py := exec.Command("python3", "-m", "json.tool")
			py.Stdin, py.Stdout, py.Stderr = r, &parsed, &pyErr
			if err := job.Start(); err != nil {
				t.Fatal(err)
			}
			if err := py.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close() // the children hold their own ends
			r.Close()
			jobErr := job.Wait()
			if err := py.Wait(); err != nil {
				t.Fatalf("python3 -m json.tool: %v\n%s\nbmcjob stderr:\n%s", err, pyErr.String(), progress.String())
			}
			if jobErr != nil {
				t.Fatalf("bmcjob %s: %v\n%s", strings.Join(args, " "), jobErr, progress.String())
			}
			var status struct {
				Result string `json:"result"`
			}
			if err := json.Unmarshal(parsed.Bytes(), &status); err != nil || status.Result != "Succeeded" {
				t.Errorf("parsed status: %v, result %q\n%s", err, status.Result, parsed.String())
			}
			if !strings.Contains(progress.String(), "simulated Redfish BMC at") || !regexp.MustCompile(`task 1/\d .*: done`).MatchString(progress.String()) {
				t.Errorf("standard error lacks the progress:\n%s", progress.String())
			}
		})
	}
}

// Results on standard output, progress on standard error, in process.
func TestStreamsSplitResultsAndProgress(t *testing.T) {
	stdout, stderr, err := runIO(t, "", "run", "-simulate", "-simulate-power-delay", "0", "-json", "-spec", "specs/netboot.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !json.Valid([]byte(stdout)) {
		t.Errorf("standard output is not one JSON document:\n%s", stdout)
	}
	if !strings.Contains(stderr, "task 3/3 power on: done") || strings.Contains(stderr, `"result"`) {
		t.Errorf("standard error should hold the progress and nothing of the result:\n%s", stderr)
	}
	stdout, stderr, err = runIO(t, "", "power", "status", "-simulate")
	if err != nil || stdout != "power status: Succeeded: On\n" {
		t.Errorf("power status: %v, standard output %q (want only the result line)\n%s", err, stdout, stderr)
	}
	// -h asked for: the usage on standard output. A mistake: the usage on
	// standard error, nothing on standard output.
	if stdout, _, _ := runIO(t, "", "run", "-h"); !strings.Contains(stdout, "usage: bmcjob run") {
		t.Errorf("run -h printed no usage on standard output: %q", stdout)
	}
	stdout, stderr, err = runIO(t, "", "run", "-bogus")
	if err == nil || stdout != "" || !strings.Contains(stderr, "usage: bmcjob run") {
		t.Errorf("run -bogus: %v, standard output %q, standard error:\n%s", err, stdout, stderr)
	}
}

// Every spec shipped in specs/ runs against the simulator (its address
// replaces the spec's), wait-for-boot and virtual media included.
func TestEveryShippedSpecRunsSimulated(t *testing.T) {
	files, err := filepath.Glob("specs/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example specs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			stdout, stderr, err := runIO(t, "", "run", "-simulate", "-simulate-power-delay", "0", "-json", "-spec", f)
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, stderr, stdout)
			}
			var status struct {
				Result string `json:"result"`
				Tasks  []struct {
					Result string `json:"result"`
				} `json:"tasks"`
			}
			if err := json.Unmarshal([]byte(stdout), &status); err != nil || status.Result != "Succeeded" {
				t.Fatalf("status: %v, result %q\n%s", err, status.Result, stdout)
			}
			for i, ts := range status.Tasks {
				if ts.Result != "Succeeded" {
					t.Errorf("task %d: %q", i+1, ts.Result)
				}
			}
		})
	}
}

// refusedAddress is a loopback address nothing listens on.
func refusedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startRun runs bmcjob in the background on a fake clock and returns its
// standard error, the clock and the command's result.
func startRun(t *testing.T, ctx context.Context, password string, args ...string) (*lockedBuffer, *clock.Fake, <-chan error) {
	t.Helper()
	stderr := &lockedBuffer{}
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, &env{password: password, stdout: &lockedBuffer{}, stderr: stderr, clock: clk}, args)
	}()
	return stderr, clk, done
}

// waitFor polls until cond holds, failing after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool, show func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, show())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Against a BMC that refuses connections the operator sees, every
// -progress, which task waits and the error it retries on; -timeout ends
// with a message naming the task and what it waited for. The progress and
// the timeout run on a fake clock.
func TestProgressAndTimeoutAgainstAnUnreachableBMC(t *testing.T) {
	addr := refusedAddress(t)
	stderr, clk, done := startRun(t, context.Background(), "pw", "run", "-spec", "specs/netboot.json",
		"-bmc", "redfish://"+addr+"/redfish/v1/Systems/1", "-user", "admin", "-progress", "3s", "-timeout", "5m", "-unreachable", "0")
	// The job retries the refused connection, and runJob waits on the
	// clock for the timeout and the first progress line.
	waitFor(t, "a retry and the clock waiters", func() bool {
		return strings.Contains(stderr.String(), "(retrying: ") && clk.Waiters() >= 2
	}, stderr.String)
	clk.Advance(3 * time.Second)
	want := regexp.MustCompile(`3s elapsed: task 1/3 power off waits for the BMC to answer \(attempt \d+ failed: .*connection refused`)
	waitFor(t, "a progress line", func() bool { return want.MatchString(stderr.String()) }, stderr.String)
	clk.Advance(5 * time.Minute)
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("bmcjob did not end at -timeout:\n%s", stderr.String())
	}
	if err == nil || !regexp.MustCompile(`^gave up after 5m0s \(-timeout\): task 1/3 power off was waiting for the BMC to answer \(attempt \d+ failed: .*connection refused`).MatchString(err.Error()) {
		t.Fatalf("timeout error: %v", err)
	}
	if strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("timeout error is the bare context error: %v", err)
	}
}

// A power change that does not land: the progress and the timeout say the
// task waits for the BMC to report the power state; Ctrl-C says the same.
func TestTimeoutNamesWhatTheTaskWaitedFor(t *testing.T) {
	stderr, clk, done := startRun(t, context.Background(), "", "power", "off", "-simulate", "-simulate-power-delay", "1h", "-timeout", "10m")
	waitFor(t, "power off to be sent", func() bool {
		return strings.Contains(stderr.String(), "power off: verifying") && clk.Waiters() >= 2
	}, stderr.String)
	clk.Advance(3 * time.Second)
	waitFor(t, "a progress line", func() bool {
		return strings.Contains(stderr.String(), "3s elapsed: task 1/1 power off waits for the BMC to report power Off\n")
	}, stderr.String)
	clk.Advance(10 * time.Minute)
	err := <-done
	if err == nil || err.Error() != "gave up after 10m0s (-timeout): task 1/1 power off was waiting for the BMC to report power Off" {
		t.Fatalf("timeout error: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stderr, _, done = startRun(t, ctx, "", "power", "soft-off", "-simulate", "-simulate-power-delay", "1h")
	waitFor(t, "soft-off to be sent", func() bool { return strings.Contains(stderr.String(), "soft-off: verifying") }, stderr.String)
	cancel()
	if err := <-done; err == nil || err.Error() != "interrupted after 0s: task 1/1 power soft-off was waiting for the BMC to report power Off" {
		t.Fatalf("Ctrl-C: %v", err)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		stdout, _, err := runIO(t, "", args...)
		if err != nil || !regexp.MustCompile(`^bmcjob (\(devel\)|v\S+)\n$`).MatchString(stdout) {
			t.Errorf("bmcjob %s: %v, %q", args[0], err, stdout)
		}
	}
	if got := moduleVersion(&debug.BuildInfo{Main: debug.Module{Path: "github.com/bmckit/bmckit/cmd/bmcjob", Version: "v0.1.0"}}, true); got != "v0.1.0" {
		t.Errorf("module version v0.1.0 reads %q", got)
	}
	if got := moduleVersion(nil, false); got != "(devel)" {
		t.Errorf("no build information reads %q, want (devel)", got)
	}
	// The built binary reports its module's version (a checkout's build:
	// "(devel)" or a VCS pseudo-version).
	out, err := exec.Command(buildBMCJob(t), "--version").Output()
	if err != nil || !regexp.MustCompile(`^bmcjob (\(devel\)|v\S+)\n$`).Match(out) {
		t.Errorf("bmcjob --version: %v, %q", err, out)
	}
}

// Errors read in the operator's terms: no Go type names, no doubled
// prefixes.
func TestErrorsAreWordedForOperators(t *testing.T) {
	notObject := writeSpec(t, `[1, 2]`)
	for _, args := range [][]string{
		{"run", "-spec", notObject},
		{"run", "-spec", notObject, "-bmc", "redfish://10.0.0.5"},
	} {
		_, err := runOut(t, "pw", args...)
		if err == nil || err.Error() != "-spec "+notObject+": invalid job spec: decoding JSON: want an object, got an array" {
			t.Errorf("bmcjob %s: %v", strings.Join(args, " "), err)
		}
	}
	_, err := runOut(t, "pw", "power", "on", "-bmc", "redfish://10.0.0.5?password=hunter2")
	if err == nil || !strings.HasPrefix(err.Error(), "-bmc: invalid BMC address: credentials in the URL are not accepted") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("password in -bmc: %v", err)
	}
}

// run prints the outcome as lines by default (-json=false), as every
// command does.
func TestRunWithoutJSONPrintsLines(t *testing.T) {
	stdout, stderr, err := runIO(t, "", "run", "-simulate", "-simulate-power-delay", "0", "-spec", "specs/power-cycle.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := regexp.MustCompile(`^job Succeeded: .*\n  task 1/2 power status: Succeeded: On\n  task 2/2 power cycle: Succeeded: .*\n$`)
	if !want.MatchString(stdout) {
		t.Errorf("standard output:\n%s", stdout)
	}
}
