package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
)

// secureboot on redfishtest: status reads, on sets SecureBootEnable (the
// DMTF shape: the current boot follows at the next boot) and says a
// reboot is required, status then shows it pending, reset-keys runs the
// action; a BMC without SecureBoot is NotSupported having changed nothing.
func TestSecureBootAgainstRedfishtest(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	defer srv.Close()
	c := srv.Credentials()
	target := []string{"-bmc", srv.Address("1"), "-user", c.Username, "-insecure"}
	sb := func(args ...string) (string, string, error) {
		return runIO(t, c.Password, append(append([]string{"secureboot"}, args...), target...)...)
	}

	stdout, _, err := sb("status", "-json")
	var st bmc.SecureBootState
	if err != nil || json.Unmarshal([]byte(stdout), &st) != nil || st.Enabled || st.Pending != nil || len(st.ResetKeys) == 0 {
		t.Fatalf("secureboot status -json: %v\n%s", err, stdout)
	}
	stdout, stderr, err := sb("on")
	if err != nil || !strings.Contains(stdout, "Secure Boot on: Succeeded") || !strings.Contains(stdout, "reboot required") {
		t.Fatalf("secureboot on: %v\n%s%s", err, stdout, stderr)
	}
	if enabled, current, _, _ := srv.SecureBoot("1"); !enabled || current {
		t.Errorf("after secureboot on: the BMC has enabled %t, current boot %t; want true, false", enabled, current)
	}
	stdout, _, err = sb("status")
	if err != nil || !strings.Contains(stdout, "next boot:     true (reboot required)") {
		t.Errorf("secureboot status after on:\n%s", stdout)
	}
	// Asked again: the next boot brings it already; still pending.
	stdout, _, err = sb("on", "-json")
	var js job.Status
	if err != nil || json.Unmarshal([]byte(stdout), &js) != nil || js.Tasks[0].SecureBoot == nil || !js.Tasks[0].SecureBoot.RebootRequired {
		t.Errorf("secureboot on -json: %v\n%s", err, stdout)
	}
	stdout, _, err = sb("reset-keys", "DeletePK")
	if err != nil || !strings.Contains(stdout, "reset Secure Boot keys (DeletePK): Succeeded") {
		t.Errorf("secureboot reset-keys DeletePK: %v\n%s", err, stdout)
	}
	if _, _, mode, _ := srv.SecureBoot("1"); mode != "SetupMode" {
		t.Errorf("after DeletePK the mode is %q, want SetupMode", mode)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reset-keys"}, "secureboot: want status, on, off or reset-keys KIND"},
		{[]string{"on", "off"}, "secureboot: want status, on, off or reset-keys KIND"},
		{[]string{"reset-keys", "ResetEverything"}, `secureboot reset-keys: "ResetEverything" is not one of [ResetAllKeysToDefault`},
		{[]string{"sideways"}, `secureboot: "sideways" is not one of status, on, off, reset-keys`},
	} {
		if _, _, err := sb(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("secureboot %s: %v; want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

func TestSecureBootNotSupportedChangesNothing(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{SecureBoot: redfishtest.SecureBootNone})
	defer srv.Close()
	c := srv.Credentials()
	stdout, _, err := runIO(t, c.Password, "secureboot", "off", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")
	if err == nil || !strings.Contains(stdout, "Failed (NotSupported)") {
		t.Fatalf("secureboot off without SecureBoot: %v\n%s", err, stdout)
	}
	for _, r := range srv.Requests() {
		if r.Method != "GET" && !strings.HasSuffix(r.Path, "/Sessions") && !strings.Contains(r.Path, "/Sessions/") {
			t.Errorf("a request that changes state went out: %s %s", r.Method, r.Path)
		}
	}
	if _, _, err := runIO(t, c.Password, "secureboot", "status", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("secureboot status without SecureBoot: %v", err)
	}
}

func TestSecureBootSimulated(t *testing.T) {
	out, err := runOut(t, "", "secureboot", "status", "-simulate")
	if err != nil || !strings.Contains(out, "enabled:       false") || !strings.Contains(out, "mode:          UserMode") {
		t.Errorf("secureboot status -simulate: %v\n%s", err, out)
	}
	out, err = runOut(t, "", "secureboot", "off", "-simulate")
	if err != nil || !strings.Contains(out, "Secure Boot off: Succeeded") || strings.Contains(out, "reboot required") {
		t.Errorf("secureboot off -simulate (off already: nothing waits for a boot): %v\n%s", err, out)
	}
}
