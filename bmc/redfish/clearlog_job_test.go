package redfish_test

// clearLog tasks through job.Runner and the Redfish driver against
// redfishtest's LogServices, over HTTP.

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// The entries the job stores are those the BMC held, newest first; one
// ClearLog is sent; the log is empty after.
func TestClearLogJob(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  redfishtest.Config
		ref  bmc.LogRef
	}{
		{"DMTF SEL", redfishtest.Config{}, bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}},
		{"iLO 5 IML", redfishtest.VendorConfig(redfishtest.VendorILO5Apollo), bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "IML"}},
		{"OpenBMC EventLog", redfishtest.VendorConfig(redfishtest.VendorOpenBMC), bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "EventLog"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redfishtest.NewServer(c.cfg)
			t.Cleanup(srv.Close)
			held := srv.LogEntries("1", c.ref)
			if len(held) == 0 {
				t.Fatalf("the simulator holds no entries in %s", c.ref)
			}
			j := runFirmwareJob(t, srv, oneTask(srv, task.Spec{ClearLog: &task.ClearLogAction{Log: c.ref}}))
			requireSucceeded(t, j)
			st := j.Status.Tasks[0].ClearLog
			if st == nil || len(st.Entries) != len(held) {
				t.Fatalf("stored %+v; want the %d entries the BMC held", st, len(held))
			}
			want := append([]bmc.LogEntry(nil), held...)
			bmc.SortLogNewestFirst(want)
			for i, e := range want {
				e.Bound()
				got, w := st.Entries[i], task.LogEntryOf(e)
				if got.Key() != w.Key() || got.Severity != w.Severity || got.Type != w.Type || got.Resolved != w.Resolved || (got.Created == nil) != (w.Created == nil) {
					t.Errorf("entry %d: stored %+v, the BMC held %+v", i, got, e)
				}
			}
			if left := srv.LogEntries("1", c.ref); len(left) != 0 {
				t.Errorf("the log holds %d entries after the clear", len(left))
			}
			if sc := stateChanging(srv); len(sc) != 1 || !strings.HasSuffix(sc[0], "/Actions/LogService.ClearLog") || !strings.HasPrefix(sc[0], "POST ") {
				t.Errorf("state-changing requests %v; want one ClearLog POST", sc)
			}
		})
	}
}

// OpenBMC's Journal has no ClearLog, the DMTF BMC no IML: the job fails
// its preflight NotSupported with 0 state-changing requests (the power
// change before the clear is not sent either).
func TestClearLogJobNotSupported(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  redfishtest.Config
		ref  bmc.LogRef
	}{
		{"not clearable", redfishtest.VendorConfig(redfishtest.VendorOpenBMC), bmc.LogRef{Scope: bmc.LogScopeManager, ID: "Journal"}},
		{"no such log", redfishtest.Config{}, bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "IML"}},
		{"no logs", redfishtest.Config{Logs: redfishtest.LogsNone}, bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redfishtest.NewServer(c.cfg)
			t.Cleanup(srv.Close)
			srv.SetPower("1", "On")
			j := runFirmwareJob(t, srv, oneTask(srv,
				task.Spec{Power: &task.PowerAction{Op: task.PowerOff}},
				task.Spec{ClearLog: &task.ClearLogAction{Log: c.ref}}))
			if j.Status.Result != conditions.ResultFailed || j.Status.Tasks[1].Reason != conditions.ReasonNotSupported {
				t.Fatalf("job %s, task 2 %s: %s", j.Status.Result, j.Status.Tasks[1].Reason, j.Status.Tasks[1].Message)
			}
			if sc := stateChanging(srv); len(sc) != 0 {
				t.Errorf("state-changing requests %v; want none", sc)
			}
		})
	}
}
