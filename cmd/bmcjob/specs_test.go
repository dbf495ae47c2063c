package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/job"
)

// Every example spec under specs/ decodes and validates strictly, so the
// README's and -h's examples stay true.
func TestExampleSpecsDecode(t *testing.T) {
	files, err := filepath.Glob("specs/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example specs: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := job.DecodeSpec(raw); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The README's command: run the netboot example spec against the simulated
// BMC; every task's progress line ends "done", and the job succeeds.
func TestRunNetbootSpecSimulated(t *testing.T) {
	out, err := runOut(t, "", "run", "-simulate", "-simulate-power-delay", "0", "-spec", "specs/netboot.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"task 1/3 power off: done", "task 2/3 boot pxe (once, uefi): done", "task 3/3 power on: done", "job Succeeded: all 3 tasks succeeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The locate example on the simulated BMC: the locator is set and read
// back.
func TestRunLocateSpecSimulated(t *testing.T) {
	out, err := runOut(t, "", "run", "-simulate", "-spec", "specs/locate.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"task 1/1 locator LED on: done", "job Succeeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A task that fails is reported as failed in its progress line, not "done":
// power off with a 50ms timeout on a simulated BMC whose power changes take
// a minute times out.
func TestProgressLineSaysFailed(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "slow.json")
	if err := os.WriteFile(spec, []byte(`{"bmc":"redfish://x","tasks":[{"power":{"op":"off"},"timeout":"50ms"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runOut(t, "", "run", "-simulate", "-simulate-power-delay", "1m", "-spec", spec)
	if err == nil {
		t.Fatalf("the job succeeded although power off cannot land within its timeout:\n%s", out)
	}
	if !strings.Contains(out, "task 1/1 power off: failed") {
		t.Errorf("no progress line says the task failed:\n%s", out)
	}
	if strings.Contains(out, "power off: done") {
		t.Errorf("a failed task printed done:\n%s", out)
	}
}

// bmcjob -h shows the netboot spec; it must be the file's content.
func TestUsageSpecIsNetbootFile(t *testing.T) {
	raw, err := os.ReadFile("specs/netboot.json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(raw)) != specExample {
		t.Errorf("specExample differs from specs/netboot.json")
	}
	out, err := runOut(t, "", "-h")
	if err != nil || !strings.Contains(out, specExample) {
		t.Errorf("-h: err %v, output lacks the spec example:\n%s", err, out)
	}
}
