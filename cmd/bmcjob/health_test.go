package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
)

// health and log list read the simulated BMC; log clear runs a clearLog
// job whose status keeps the entries.
func TestHealthAndLogSimulated(t *testing.T) {
	out, err := runOut(t, "", "health", "-simulate")
	if err != nil || !strings.Contains(out, "system 1") || !strings.Contains(out, "manager BMC") || !strings.Contains(out, "OK") {
		t.Fatalf("health: %v\n%s", err, out)
	}
	out, err = runOut(t, "", "log", "list", "-simulate")
	if err != nil || !strings.Contains(out, "system/SEL") || !strings.Contains(out, "manager/Log") {
		t.Fatalf("log list: %v\n%s", err, out)
	}
	out, err = runOut(t, "", "log", "list", "system/SEL", "-limit", "2", "-simulate")
	if err != nil || !strings.Contains(out, "Power supply PS2 input lost") || strings.Contains(out, "Chassis intrusion") || !strings.Contains(out, "older entries follow") {
		t.Fatalf("log list system/SEL -limit 2: %v\n%s", err, out)
	}
	out, err = runOut(t, "", "log", "clear", "system/SEL", "-simulate")
	if err != nil || !strings.Contains(out, "clear log system/SEL: Succeeded: cleared log system/SEL") {
		t.Fatalf("log clear: %v\n%s", err, out)
	}
	stdout, _, err := runIO(t, "", "log", "clear", "system/SEL", "-json", "-simulate")
	var st job.Status
	if err != nil || json.Unmarshal([]byte(stdout), &st) != nil || st.Tasks[0].ClearLog == nil || len(st.Tasks[0].ClearLog.Entries) != 3 {
		t.Fatalf("log clear -json: %v\n%s", err, stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"log"}, "want list [SCOPE/ID] or clear SCOPE/ID"},
		{[]string{"log", "clear"}, "want list [SCOPE/ID] or clear SCOPE/ID"},
		{[]string{"log", "list", "chassis/SEL"}, `log "chassis/SEL": want SCOPE/ID`},
		{[]string{"log", "show"}, `"show" is not one of list, clear`},
		{[]string{"log", "list", "-limit", "5000"}, "-limit"},
		{[]string{"log", "list", "system/IML"}, `no log "system/IML"`},
		{[]string{"health", "extra"}, "takes no arguments"},
	} {
		_, err := runOut(t, "", append(c.args, "-simulate")...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bmcjob %s: %v; want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// Against an address: the health the BMC holds, a Critical chassis
// included; the BMC's credentials never printed.
func TestHealthAgainstAnAddress(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	defer srv.Close()
	srv.SetHealth("/redfish/v1/Chassis/1", redfishtest.HealthState{Health: "Critical", HealthRollup: "Critical"})
	c := srv.Credentials()
	stdout, _, err := runIO(t, c.Password, "health", "-json", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")
	var r bmc.HealthReport
	if err != nil || json.Unmarshal([]byte(stdout), &r) != nil {
		t.Fatalf("health -json: %v\n%s", err, stdout)
	}
	if len(r.Chassis) != 1 || r.Chassis[0].Health != bmc.HealthCritical || r.System.Health != bmc.HealthOK {
		t.Errorf("health %+v; want chassis Critical, system OK", r)
	}
	if strings.Contains(stdout, c.Password) {
		t.Error("the password leaked")
	}
	if srv.ActiveSessions() != 0 {
		t.Errorf("%d sessions left open", srv.ActiveSessions())
	}
	if _, err := runOut(t, "", "health", "-bmc", srv.Address("1")); err == nil || !strings.HasPrefix(err.Error(), "-user is required") {
		t.Errorf("health without -user: %v", err)
	}
}
