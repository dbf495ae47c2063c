package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// runOut runs bmcjob with args and returns its error and output.
func runOut(t *testing.T, password string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, password, &out)
	return out.String(), err
}

func TestHelpExitsZeroWithUsage(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"power", "-h"}, {"boot", "-h"}, {"run", "-h"}} {
		out, err := runOut(t, "", args...)
		if err != nil {
			t.Errorf("bmcjob %s: %v, want nil (exit 0)", strings.Join(args, " "), err)
		}
		if !strings.Contains(out, "usage: bmcjob") {
			t.Errorf("bmcjob %s printed no usage:\n%s", strings.Join(args, " "), out)
		}
	}
	out, _ := runOut(t, "", "-h")
	for _, c := range commands {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("usage does not list command %q:\n%s", c.name, out)
		}
	}
	if out, _ := runOut(t, "", "boot", "-h"); !strings.Contains(out, "-persistent") || !strings.Contains(out, "-bmc") {
		t.Errorf("boot -h does not list its flags:\n%s", out)
	}
}

func TestUnknownCommandAndArguments(t *testing.T) {
	if _, err := runOut(t, "", "explode"); err == nil || !strings.Contains(err.Error(), `unknown command "explode"`) {
		t.Errorf("unknown command: %v", err)
	}
	if _, err := runOut(t, "", "power", "sideways", "-bmc", "redfish://10.0.0.1"); err == nil || !strings.Contains(err.Error(), `"sideways" is not one of`) {
		t.Errorf("power sideways: %v", err)
	}
	if _, err := runOut(t, "", "power", "-bmc", "redfish://10.0.0.1"); err == nil || !strings.Contains(err.Error(), "power: want one of") {
		t.Errorf("power without an operation: %v", err)
	}
	if _, err := runOut(t, "", "power", "on"); err == nil || !strings.Contains(err.Error(), "-bmc is required") {
		t.Errorf("power on without -bmc: %v", err)
	}
	if _, err := runOut(t, "", "boot", "floppy", "-simulate"); err == nil || !strings.Contains(err.Error(), `"floppy" is not one of`) {
		t.Errorf("boot floppy: %v", err)
	}
	if _, err := runOut(t, "", "boot", "pxe", "-mode", "dos", "-bmc", "redfish://10.0.0.1"); err == nil || !strings.Contains(err.Error(), `bootDevice.mode: "dos"`) {
		t.Errorf("boot -mode dos: %v", err)
	}
	if _, err := runOut(t, "", "power", "on", "-bmc", "ftp://10.0.0.1"); err == nil || !strings.Contains(err.Error(), "-bmc: invalid job spec: bmc:") {
		t.Errorf("power on -bmc ftp://: %v", err)
	}
}

func TestRunCommandAndOldFlagsAgree(t *testing.T) {
	spec := writeSpec(t, netbootSpec)
	for _, args := range [][]string{
		{"run", "-simulate", "-simulate-power-delay", "0", "-spec", spec},
		{"-simulate", "-simulate-power-delay", "0", "-spec", spec}, // the flags alone, as before
		{"run", "-spec", spec, "-simulate", "-simulate-power-delay", "0"},
	} {
		out, err := runOut(t, "", args...)
		if err != nil || !strings.Contains(out, `"result": "Succeeded"`) {
			t.Errorf("bmcjob %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func TestPowerOnOneShotSimulated(t *testing.T) {
	// Flags after the operation, as users type them.
	out, err := runOut(t, "", "power", "off", "-simulate", "-simulate-power-delay", "0")
	if err != nil {
		t.Fatalf("power off: %v\n%s", err, out)
	}
	if !strings.Contains(out, "power off: Succeeded: Off") {
		t.Errorf("power off output:\n%s", out)
	}
	out, err = runOut(t, "", "power", "cycle", "-simulate", "-simulate-power-delay", "0", "-json")
	if err != nil || !strings.Contains(out, `"result": "Succeeded"`) {
		t.Errorf("power cycle -json: %v\n%s", err, out)
	}
}

func TestBootOneShotSimulated(t *testing.T) {
	for _, dev := range []string{"pxe", "disk", "cd", "bios"} {
		out, err := runOut(t, "", "boot", "-simulate", dev, "-persistent", "-mode", "uefi")
		if err != nil {
			t.Fatalf("boot %s: %v\n%s", dev, err, out)
		}
		if !strings.Contains(out, "(persistent, uefi): Succeeded:") {
			t.Errorf("boot %s output:\n%s", dev, out)
		}
	}
}
