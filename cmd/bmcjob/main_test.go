package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

func writeSpec(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const netbootSpec = `{"bmc": "redfish://placeholder.invalid", "tasks": [
  {"power": {"op": "off"}},
  {"bootDevice": {"device": "pxe", "mode": "uefi"}},
  {"power": {"op": "on"}}]}`

func TestBMCJobSimulated(t *testing.T) {
	s, err := runOut(t, "", "-simulate", "-json", "-spec", writeSpec(t, netbootSpec))
	if err != nil {
		t.Fatalf("run: %v\n%s", err, s)
	}
	for _, want := range []string{`"result": "Succeeded"`, "task 3/3 power on: verifying", `"type": "Completed"`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestBMCJobBadSpecNamesTheField(t *testing.T) {
	spec := writeSpec(t, `{"bmc": "redfish://10.0.0.1", "tasks": [{"power": {"op": "sideways"}}]}`)
	_, err := runOut(t, "", "-spec", spec)
	if err == nil || !strings.Contains(err.Error(), `tasks[0].power.op: "sideways"`) {
		t.Fatalf("want an error naming tasks[0].power.op, got %v", err)
	}
	_, err = runOut(t, "", "-spec", writeSpec(t, `{"bmc": "redfish://10.0.0.1", "tasks": [], "extra": 1}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "extra"`) {
		t.Fatalf("want an unknown-field error, got %v", err)
	}
	if _, err := runOut(t, "", "run"); err == nil || !strings.Contains(err.Error(), "-spec is required") {
		t.Fatalf("want -spec required, got %v", err)
	}
	if _, err := runOut(t, ""); err == nil || !strings.Contains(err.Error(), "a command is required") {
		t.Fatalf("want a command required, got %v", err)
	}
}

func TestBMCJobWrongPasswordFailsWithoutLeakingIt(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	defer srv.Close()
	const pw = "Tr0ub4dor-and-3"
	out, err := runOut(t, pw, "-spec", writeSpec(t, netbootSpec), "-bmc", srv.Address("1"), "-user", srv.Credentials().Username, "-insecure", "-json")
	if err == nil {
		t.Fatalf("job with a wrong password succeeded:\n%s", out)
	}
	if !strings.Contains(err.Error(), "Failed") || !strings.Contains(out, `"reason": "Unauthorized"`) {
		t.Errorf("want a failed job with reason Unauthorized, got %v\n%s", err, out)
	}
	if strings.Contains(err.Error()+out, pw) {
		t.Fatalf("the password leaked:\n%v\n%s", err, out)
	}
}
