package redfish_test

import (
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// SystemStatus costs what PowerState costs: one GET of the system, which
// also carries the system's health (0 more requests for health on a BMC
// that puts Status there).
func TestSystemStatusOneRequest(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "1", false)
	srv.SetHealth("/redfish/v1/Systems/1", redfishtest.HealthState{Health: "Warning", HealthRollup: "Critical"})
	srv.ClearRequests()
	st, err := drv.SystemStatus(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Power != bmc.PowerOff || st.Health.Health != bmc.HealthWarning || st.Health.Rollup != bmc.HealthCritical || st.ReadTime.IsZero() {
		t.Fatalf("SystemStatus = %+v", st)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Path != "/redfish/v1/Systems/1" {
		t.Fatalf("SystemStatus sent %+v; want one GET of the system", reqs)
	}
}

// iLO 5 lists IML entries as links: a page of two costs the collection
// and two entry GETs, whatever the log's length; the entries read are
// those the BMC holds, iLO's severity words mapped.
func TestILO5IMLReadsOnlyThePage(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorILO5Apollo), testOptions(), "1", false)
	iml := bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "IML"}
	if _, err := drv.LogServices(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv.ClearRequests()
	p, err := drv.LogEntries(t.Context(), iml, bmc.LogQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	held := srv.LogEntries("1", iml)
	if len(p.Entries) != 2 || p.Entries[0] != held[3] || p.Entries[1] != held[2] || p.Next != "3" {
		t.Fatalf("page %+v\nwant the newest two of %+v", p, held)
	}
	if !p.Entries[1].Resolved || p.Entries[1].Severity != bmc.SeverityOK || p.Entries[0].Severity != bmc.SeverityCritical {
		t.Fatalf("iLO severities: %+v", p.Entries)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("%d requests for a page of 2 (%+v); want 3", n, srv.Requests())
	}
}

// OpenBMC's Journal has no ClearLog: ClearLog is refused before any POST.
func TestOpenBMCJournalNotClearable(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.VendorConfig(redfishtest.VendorOpenBMC), testOptions(), "1", false)
	err := drv.ClearLog(t.Context(), bmc.LogRef{Scope: bmc.LogScopeManager, ID: "Journal"})
	notSupportedBeforePatch(t, srv, err, "no LogService.ClearLog")
	for _, r := range srv.Requests() {
		if r.Method == "POST" && r.Path != "/redfish/v1/SessionService/Sessions" {
			t.Fatalf("a POST reached the BMC: %+v", r)
		}
	}
	if err := drv.CheckNeed(t.Context(), bmc.Need{ClearLog: &bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "EventLog"}}); err != nil {
		t.Fatalf("CheckNeed(clear the EventLog): %v", err)
	}
}
