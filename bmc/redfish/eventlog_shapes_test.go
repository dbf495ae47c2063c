package redfish

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// The entry collections and entries of testdata/logs are shaped after
// vendors' payloads: iLO 5's IML (links only, then an entry with Oem.Hpe
// and iLO's Severity words), bmcweb's EventLog (a page with nextLink and
// IDs that are Unix times, "_1" for a second entry in the same second),
// the DMTF mockup's SEL (SEL fields, an offset other than UTC, Resolved)
// and a Cray EX node's SEL (no Created). Each decodes exactly so.
func TestDecodeLogShapes(t *testing.T) {
	utc := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UTC()
	}
	for _, c := range []struct {
		file string
		want entriesPage
	}{
		{"ilo5-iml-entries.json", entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1"}, linkOnly: true, uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/1/"},
			{entry: bmc.LogEntry{ID: "2"}, linkOnly: true, uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/2/"},
			{entry: bmc.LogEntry{ID: "3"}, linkOnly: true, uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/3/"},
		}}},
		{"openbmc-eventlog-entries.json", entriesPage{Next: "/redfish/v1/Systems/system/LogServices/EventLog/Entries?$skip=1000", Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1612187325", Created: utc("2021-02-01T13:48:45Z"), Severity: bmc.SeverityOK, Message: "Host system DC power is on",
				MessageID: "OpenBMC.0.1.DCPowerOn", Type: "Event"}, uri: "/redfish/v1/Systems/system/LogServices/EventLog/Entries/1612187325"},
			{entry: bmc.LogEntry{ID: "1612187325_1", Created: utc("2021-02-01T13:48:45Z"), Severity: bmc.SeverityWarning,
				Message: "Sensor CPU0_Temp reading 92 crossed upper warning threshold 90", MessageID: "OpenBMC.0.1.SensorThresholdWarningHighGoingHigh", Type: "Event"},
				uri: "/redfish/v1/Systems/system/LogServices/EventLog/Entries/1612187325_1"},
		}}},
		{"dmtf-sel-entries.json", entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1", Created: utc("2012-03-07T14:44:00Z"), Severity: bmc.SeverityCritical, Message: "Temperature threshold exceeded",
				MessageID: "Event.1.0.TempAssert", Type: "SEL"}, uri: "/redfish/v1/Systems/437XR1138R2/LogServices/Log1/Entries/1"},
			{entry: bmc.LogEntry{ID: "2", Created: utc("2012-03-07T20:45:00Z"), Severity: bmc.SeverityOK, Message: "Temperature back to normal",
				MessageID: "Event.1.0.TempDeassert", Type: "SEL", Resolved: true}, uri: "/redfish/v1/Systems/437XR1138R2/LogServices/Log1/Entries/2"},
		}}},
		{"crayex-sel-entries.json", entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1", Severity: bmc.SeverityOK, Message: "Node power on", MessageID: "CrayAlerts.1.0.NodePowerOn", Type: "SEL"},
				uri: "/redfish/v1/Systems/Node0/LogServices/SEL/Entries/1"},
			{entry: bmc.LogEntry{ID: "2", Severity: bmc.SeverityWarning, Message: "CPU 0 VR temperature high", MessageID: "CrayAlerts.1.0.VRTempHigh", Type: "SEL"},
				uri: "/redfish/v1/Systems/Node0/LogServices/SEL/Entries/2"},
		}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			got, err := decodeEntriesPage(readLogShape(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("decoded %+v\nwant    %+v", got, c.want)
			}
		})
	}
	// iLO 5's entry itself: Severity "Repaired" and Oem.Hpe.Repaired.
	p, err := decodeEntriesPage([]byte(`{"Members":[` + string(readLogShape(t, "ilo5-iml-entry.json")) + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := bmc.LogEntry{ID: "3", Created: utc("2022-08-03T19:41:55Z"), Severity: bmc.SeverityOK, Resolved: true,
		Message: "Power Supply Failure (Power Supply 2, Slot 2)", Type: "Oem"}
	if got := p.Entries[0].entry; got != want || p.Entries[0].linkOnly {
		t.Fatalf("iLO 5 IML entry decoded %+v (link only %v)\nwant %+v", got, p.Entries[0].linkOnly, want)
	}
	// The iLO words for the other severities.
	for word, sev := range map[string]bmc.Severity{"Critical": bmc.SeverityCritical, "Caution": bmc.SeverityWarning, "Informational": bmc.SeverityOK, "Bogus": bmc.SeverityUnknown} {
		p, err := decodeEntriesPage([]byte(`{"Members":[{"Id":"9","Severity":"` + word + `"}]}`))
		if err != nil || p.Entries[0].entry.Severity != sev || p.Entries[0].entry.Resolved {
			t.Fatalf("Severity %q: %+v, %v; want %q, not resolved", word, p, err, sev)
		}
	}
}

func readLogShape(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "logs", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeEntriesPage: entry collections are outside input. The decoder
// never panics; what it returns names every entry and is bounded once
// paged.
func FuzzDecodeEntriesPage(f *testing.F) {
	for _, n := range []string{"ilo5-iml-entries.json", "ilo5-iml-entry.json", "openbmc-eventlog-entries.json", "dmtf-sel-entries.json", "crayex-sel-entries.json"} {
		f.Add(readLogShape(f, n))
	}
	for _, s := range []string{`{"Members":[{"@odata.id":"/a/"}]}`, `{"Members":[{}]}`, `{"Members":null}`, `{"Members":[1]}`,
		`{"Members":[{"Id":"1","Created":"not a time","Severity":7}]}`, `{"Members@odata.nextLink":"https://bmc:443/x?$skip=2"}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeEntriesPage(b)
		if err != nil {
			return
		}
		var all []bmc.LogEntry
		for _, e := range p.Entries {
			if e.entry.ID == "" {
				t.Fatalf("an entry without an ID: %+v", e)
			}
			if !e.entry.Created.IsZero() && e.entry.Created.Location() != time.UTC {
				t.Fatalf("Created not in UTC: %v", e.entry.Created)
			}
			all = append(all, e.entry)
		}
		page, err := bmc.PageLog(all, bmc.LogQuery{Limit: bmc.MaxLogLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			if len(e.Message) > bmc.MaxLogMessage || len(e.ID) > bmc.MaxInventoryString {
				t.Fatalf("an entry out of bounds: %d-byte message", len(e.Message))
			}
		}
	})
}

// FuzzResourceHealth: a resource's Status is outside input; what is read
// is one of bmc's Health values, bounded.
func FuzzResourceHealth(f *testing.F) {
	for _, s := range []string{`{"Id":"1","Status":{"State":"Enabled","Health":"OK","HealthRollup":"Critical"}}`,
		`{"Status":{"Health":"warning","Conditions":[{"MessageId":"Base.1.8.ConditionInRelatedResource"}]}}`, `{"Status":null}`, `{"Status":{"Health":7}}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var res struct {
			ID     string `json:"Id"`
			Status *healthStatus
		}
		if err := json.Unmarshal(b, &res); err != nil {
			return
		}
		r := bmc.HealthReport{System: resourceHealth(res.ID, res.Status)}
		r.Bound()
		for _, h := range []bmc.Health{r.System.Health, r.System.Rollup} {
			switch h {
			case bmc.HealthOK, bmc.HealthWarning, bmc.HealthCritical, bmc.HealthUnknown:
			default:
				t.Fatalf("health %q", h)
			}
		}
		if len(r.System.Faults) > bmc.MaxHealthFaults {
			t.Fatalf("%d faults", len(r.System.Faults))
		}
	})
}
