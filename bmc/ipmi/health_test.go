package ipmi_test

import (
	"reflect"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// TestSystemStatusOneRequest: SystemStatus reads power and health with the
// one Get Chassis Status request PowerState sends, and Health costs one
// more on a BMC without sensors (Get SDR Repository Info: 0 records); the
// fault bits set on the simulator are the faults read.
func TestSystemStatusOneRequest(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{PoweredOn: true})
	drv, err := dialer(t, ipmi.Options{}).Open(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(t.Context())
	faults := ipmitest.ChassisFaults{CoolingFault: true, Intrusion: true}
	sim.Chassis().SetFaults(faults)
	before := drv.Stats().Requests
	st, err := drv.SystemStatus(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := drv.Stats().Requests - before; n != 1 {
		t.Errorf("SystemStatus sent %d requests, want 1", n)
	}
	want := bmc.ResourceHealth{ID: "chassis", Health: bmc.HealthWarning, Rollup: bmc.HealthWarning, Faults: []string{"cooling/fan fault", "chassis intrusion"}}
	if st.Power != bmc.PowerOn || !reflect.DeepEqual(st.Health, want) || st.ReadTime.IsZero() {
		t.Errorf("SystemStatus = %+v, want on and %+v", st, want)
	}
	before = drv.Stats().Requests
	h, err := drv.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := drv.Stats().Requests - before; n != 2 {
		t.Errorf("Health sent %d requests, want 2 (chassis status, SDR repository info)", n)
	}
	if !reflect.DeepEqual(h.System, want) || len(h.Chassis)+len(h.Managers)+len(h.Sensors) != 0 {
		t.Errorf("Health = %+v, want the system %+v alone", h, want)
	}
}

// TestSELRequests: reading a SEL of n records costs Get SEL Info and n Get
// SEL Entry requests, whatever the page; an empty SEL costs Get SEL Info
// alone; clearing costs Reserve SEL, the erase and its status polls.
func TestSELRequests(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{SELErasePolls: 3})
	drv, err := dialer(t, ipmi.Options{RequestsPerSecond: -1}).Open(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(t.Context())
	ref := bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}
	count := func(what string, want int64, f func() error) {
		t.Helper()
		before := drv.Stats().Requests
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := drv.Stats().Requests - before; n != want {
			t.Errorf("%s sent %d requests, want %d", what, n, want)
		}
	}
	read := func(q bmc.LogQuery) (p bmc.LogPage, err error) {
		p, err = drv.LogEntries(t.Context(), ref, q)
		return p, err
	}
	count("LogEntries of an empty SEL", 1, func() error { _, err := read(bmc.LogQuery{}); return err })
	addEvents(sim.SEL(), 12)
	var p bmc.LogPage
	count("LogEntries(Limit 5) of 12 records", 13, func() error { var err error; p, err = read(bmc.LogQuery{Limit: 5}); return err })
	if len(p.Entries) != 5 || p.Entries[0].ID != "12" || p.Next != "8" {
		t.Errorf("first page: %d entries from %s, Next %q; want 5 from 12, Next 8", len(p.Entries), p.Entries[0].ID, p.Next)
	}
	count("ClearLog: reserve, erase, 3 polls in progress, 1 completed", 2+3+1, func() error { return drv.ClearLog(t.Context(), ref) })
	if n := len(sim.SEL().Records()); n != 0 {
		t.Errorf("after ClearLog the simulator holds %d records", n)
	}
	if _, err := read(bmc.LogQuery{After: "8"}); err == nil {
		t.Errorf("LogEntries after an entry the clear removed: no error; want bmc.ErrLogChanged")
	}
}
