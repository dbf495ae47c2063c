package main

import (
	"context"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// runOut runs bmcjob with args and returns its error and output: standard
// output and standard error together, in the order written.
func runOut(t *testing.T, password string, args ...string) (string, error) {
	t.Helper()
	out := &lockedBuffer{}
	err := run(context.Background(), &env{password: password, stdout: out, stderr: out}, args)
	return out.String(), err
}

// runIO runs bmcjob with args and returns standard output and standard
// error apart.
func runIO(t *testing.T, password string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e lockedBuffer
	err = run(context.Background(), &env{password: password, stdout: &o, stderr: &e}, args)
	return o.String(), e.String(), err
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
	if _, err := runOut(t, "", "power", "status", "extra", "-simulate"); err == nil || !strings.Contains(err.Error(), "power: want one of status,") {
		t.Errorf("power status extra: %v", err)
	}
	if _, err := runOut(t, "", "boot", "floppy", "-simulate"); err == nil || !strings.Contains(err.Error(), `"floppy" is not one of`) {
		t.Errorf("boot floppy: %v", err)
	}
	if _, err := runOut(t, "", "boot", "pxe", "-mode", "dos", "-bmc", "redfish://10.0.0.1"); err == nil || !strings.Contains(err.Error(), `bootDevice.mode: "dos"`) {
		t.Errorf("boot -mode dos: %v", err)
	}
	if _, err := runOut(t, "", "power", "on", "-bmc", "ftp://10.0.0.1"); err == nil || err.Error() != `-bmc: invalid BMC address: unsupported scheme "ftp"; supported: redfish, redfish+https, redfish+http, ipmi` {
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
		if err != nil || !strings.Contains(out, "job Succeeded: all 3 tasks succeeded") {
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

func TestPowerStatusOneShot(t *testing.T) {
	out, err := runOut(t, "", "power", "status", "-simulate")
	if err != nil {
		t.Fatalf("power status: %v\n%s", err, out)
	}
	if !strings.Contains(out, "power status: Succeeded: On\n") {
		t.Errorf("power status output:\n%s", out)
	}
	out, err = runOut(t, "", "power", "-json", "status", "-simulate")
	if err != nil || !strings.Contains(out, `"powerState": "On"`) {
		t.Errorf("power status -json: %v\n%s", err, out)
	}
}

// Against a real address: the simulator with its credentials as a user
// would pass them.
func TestPowerStatusOneShotAgainstAnAddress(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	defer srv.Close()
	srv.SetPower("1", "Off")
	c := srv.Credentials()
	out, err := runOut(t, c.Password, "power", "status", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")
	if err != nil || !strings.Contains(out, "power status: Succeeded: Off") {
		t.Fatalf("power status: %v\n%s", err, out)
	}
	if srv.Logins() != 1 {
		t.Errorf("%d logins; want 1", srv.Logins())
	}
	const wrong = "not-the-Password-9"
	out, err = runOut(t, wrong, "power", "status", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")
	if err == nil || !strings.Contains(err.Error(), "(Unauthorized)") {
		t.Fatalf("power status with a wrong password: %v\n%s", err, out)
	}
	if strings.Contains(out+err.Error(), wrong) {
		t.Fatalf("the password leaked:\n%v\n%s", err, out)
	}
}

func TestBootHTTPOneShot(t *testing.T) {
	const uri = "https://boot.example/ipxe.efi"
	out, err := runOut(t, "", "boot", "http", "--uri", uri, "-simulate")
	if err != nil {
		t.Fatalf("boot http: %v\n%s", err, out)
	}
	if !strings.Contains(out, "boot http (once) from "+uri+": Succeeded: uefi-http (once, uefi) from "+uri) {
		t.Errorf("boot http output (want the override read back with its URI):\n%s", out)
	}
	if _, err := runOut(t, "", "boot", "http", "-simulate"); err == nil || !strings.Contains(err.Error(), "-uri is required") {
		t.Errorf("boot http without -uri: %v", err)
	}
	if _, err := runOut(t, "", "boot", "http", "-uri", "tftp://h/x.efi", "-simulate"); err == nil || !strings.Contains(err.Error(), `bootDevice.uri: "tftp://h/x.efi" is not an http:// or https:// URL`) {
		t.Errorf("boot http -uri tftp://: %v", err)
	}
	if _, err := runOut(t, "", "boot", "pxe", "-uri", uri, "-simulate"); err == nil || !strings.Contains(err.Error(), "only device http boots from a URI") {
		t.Errorf("boot pxe -uri: %v", err)
	}
}

// A Redfish BMC without HttpBootUri: the command fails with NotSupported.
func TestBootHTTPOneShotNotSupported(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{NoHTTPBootURI: true})
	defer srv.Close()
	c := srv.Credentials()
	out, err := runOut(t, c.Password, "boot", "http", "-uri", "http://10.0.0.1/x.efi", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")
	if err == nil || !strings.Contains(err.Error(), "Failed (NotSupported)") || !strings.Contains(err.Error(), "HttpBootUri") {
		t.Fatalf("boot http on a BMC without it: %v\n%s", err, out)
	}
}

// firmware update against the simulated BMC: the update is staged for the
// next boot, the task power-cycles the system and verifies the version; a
// spec with a firmwareUpdate task runs the same way; bad flags name the
// field.
func TestFirmwareUpdateSimulated(t *testing.T) {
	out, err := runOut(t, "", "firmware", "update", "-simulate", "-simulate-power-delay", "0", "-component", "BIOS", "-version", "2.1")
	if err != nil || !strings.Contains(out, "update firmware BIOS to 2.1: Succeeded: update completed, BIOS at version 2.1") {
		t.Fatalf("firmware update: %v\n%s", err, out)
	}
	out, err = runOut(t, "", "run", "-simulate", "-simulate-power-delay", "0", "-spec", "specs/firmware-update.json")
	if err != nil || !strings.Contains(out, "task 2/2 update firmware BIOS to 2.1: done") || !strings.Contains(out, "update completed, BIOS at version 2.1") {
		t.Fatalf("run firmware-update.json: %v\n%s", err, out)
	}
	_, err = runOut(t, "", "firmware", "update", "-simulate", "-component", "BIOS")
	if err == nil || !strings.Contains(err.Error(), "-version") {
		t.Errorf("missing -version: %v", err)
	}
	_, err = runOut(t, "", "firmware", "update", "-bmc", "redfish://10.0.0.5", "-image", "ftp://x/y", "-component", "BIOS", "-version", "2")
	if err == nil || !strings.Contains(err.Error(), "firmwareUpdate.imageURI") {
		t.Errorf("ftp image: %v", err)
	}
}

// inventory and bios against the simulated BMC: the inventory counted, a
// BIOS change set, applied by the reboot and verified, an invalid value
// refused naming the attribute, and the spec examples run.
func TestInventoryAndBIOSSimulated(t *testing.T) {
	out, err := runOut(t, "", "inventory", "-simulate")
	if err != nil || !strings.Contains(out, "read inventory: Succeeded: 2 processors") {
		t.Fatalf("inventory: %v\n%s", err, out)
	}
	out, err = runOut(t, "", "bios", "set", "BootMode=Bios", "-reboot", "-simulate", "-simulate-power-delay", "0")
	if err != nil || !strings.Contains(out, "verify BIOS settings BootMode: Succeeded: BIOS attributes set: BootMode") {
		t.Fatalf("bios set -reboot: %v\n%s", err, out)
	}
	_, err = runOut(t, "", "bios", "set", "BootMode=Legacy", "-simulate")
	if err == nil || !strings.Contains(err.Error(), "InvalidSpec") || !strings.Contains(err.Error(), "BootMode") {
		t.Errorf("bios set BootMode=Legacy: %v", err)
	}
	_, err = runOut(t, "", "bios", "set", "BootMode", "-simulate")
	if err == nil || !strings.Contains(err.Error(), "want NAME=VALUE") {
		t.Errorf("bios set without a value: %v", err)
	}
	for _, spec := range []string{"specs/bios-settings.json", "specs/inventory.json"} {
		out, err := runOut(t, "", "run", "-simulate", "-simulate-power-delay", "0", "-json", "-spec", spec)
		if err != nil || !strings.Contains(out, `"result": "Succeeded"`) {
			t.Errorf("run %s: %v\n%s", spec, err, out)
		}
	}
}
