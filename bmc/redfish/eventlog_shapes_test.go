package redfish

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// The entry collections and entries of testdata/logs are payloads
// published by vendors and DMTF (testdata/logs/README.md names the
// repository, path and commit of each): the DMTF mockup's SEL (SEL fields,
// a top-level "@odata.nextLink" that is not Members@odata.nextLink), iLO 5's
// and iLO 6's IML (Redfish Severity at the top, iLO's words only in
// Oem.Hpe.Severity, Oem.Hpe.Repaired) and bmcweb's EventLog (IDs that are
// Unix times, "_1" for a second entry in the same second, a BMC clock
// never set). Two files are not captured and say so there: iLO's IML
// collection listing links only and a Cray EX node's SEL (no Created).
// Each decodes exactly so.
func TestDecodeLogShapes(t *testing.T) {
	utc := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UTC()
	}
	const (
		dmtf   = "/redfish/v1/Systems/437XR1138R2/LogServices/Log1/Entries/"
		iml    = "/redfish/v1/Systems/1/LogServices/IML/Entries/"
		bmcweb = "/redfish/v1/Systems/system/LogServices/EventLog/Entries/"
	)
	// members wraps a file holding entries (one, or a JSON array) in a
	// collection, as an expanded collection lists them.
	members := func(name string) []byte {
		b := bytes.TrimSpace(readLogShape(t, name))
		if b[0] != '[' {
			b = append(append([]byte{'['}, b...), ']')
		}
		return append(append([]byte(`{"Members":`), b...), '}')
	}
	for _, c := range []struct {
		file string
		body []byte
		want entriesPage
	}{
		// The mockup's "@odata.nextLink" (…?$skiptoken=2) is not read: it is
		// not Members@odata.nextLink, and its collection lists both of its
		// 2 members (Members@odata.count 2) already.
		{"dmtf-sel-entries.json", nil, entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1", Created: utc("2012-03-07T14:44:00Z"), Severity: bmc.SeverityCritical, Message: "Temperature threshold exceeded",
				MessageID: "0x592A28", Type: "SEL"}, uri: dmtf + "1"},
			{entry: bmc.LogEntry{ID: "2", Created: utc("2012-03-07T14:45:00Z"), Severity: bmc.SeverityCritical, Message: "Temperature threshold exceeded",
				MessageID: "0x592E28", Type: "SEL"}, uri: dmtf + "2"},
		}}},
		// iLO 5: Redfish's Warning at the top, Oem.Hpe.Repaired false.
		{"ilo5-iml-entry.json", members("ilo5-iml-entry.json"), entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1", Created: utc("2034-01-01T23:20:04Z"), Severity: bmc.SeverityWarning,
				Message: "System Overheating (Temperature Sensor 0x07, Location Power Supply, Temperature 48)", Type: "Oem"}, uri: iml + "1/"},
		}}},
		// iLO 6 with $expand: "Informational" and "Critical" in
		// Oem.Hpe.Severity, OK and Critical at the top; no MessageId.
		{"ilo6-iml-entries.json", nil, entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1", Created: utc("2001-01-01T00:26:39Z"), Severity: bmc.SeverityOK,
				Message: "IML Cleared ( user: System Administrator)", Type: "Oem"}, uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/1"},
			{entry: bmc.LogEntry{ID: "10", Created: utc("2022-09-15T15:42:14Z"), Severity: bmc.SeverityCritical,
				Message: "Insufficient Fan Solution", Type: "Oem"}, uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/10"},
		}}},
		// iLO 6, repaired: Severity OK at the top, "Repaired" only in
		// Oem.Hpe.Severity; Oem.Hpe.Repaired makes it Resolved.
		{"ilo6-iml-entry-repaired.json", members("ilo6-iml-entry-repaired.json"), entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "3", Created: utc("2022-10-14T07:33:24Z"), Severity: bmc.SeverityOK, Resolved: true, Type: "Oem",
				Message: "BCM 5720 1GbE 2p BASE-T LOM Adptr - NIC Connectivity status changed to OK for adapter in slot 0, port 2"},
				uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/3"},
		}}},
		// bmcweb on a BMC whose clock was never set: Created in 1970 is a
		// time like any other.
		{"openbmc-eventlog-entries.json", members("openbmc-eventlog-entries.json"), entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "205610", Created: utc("1970-01-03T09:06:50Z"), Severity: bmc.SeverityWarning, Message: "Power Unit Redundancy lost.",
				MessageID: "OpenBMC.0.1.PowerUnitRedundancyLost", Type: "Event"}, uri: bmcweb + "205610"},
			{entry: bmc.LogEntry{ID: "205610_1", Created: utc("1970-01-03T09:06:50Z"), Severity: bmc.SeverityWarning,
				Message: "Power Unit Nonredundant but has sufficient resource.", MessageID: "OpenBMC.0.1.PowerUnitNonRedundantSufficient", Type: "Event"},
				uri: bmcweb + "205610_1"},
			{entry: bmc.LogEntry{ID: "205621", Created: utc("1970-01-03T09:07:01Z"), Severity: bmc.SeverityOK, Message: "Power Unit Redundancy regained.",
				MessageID: "OpenBMC.0.1.PowerUnitRedundancyRegained", Type: "Event"}, uri: bmcweb + "205621"},
		}}},
		// Not captured (testdata/logs/README.md).
		{"ilo5-iml-entries.json", nil, entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1"}, linkOnly: true, uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/1/"},
			{entry: bmc.LogEntry{ID: "2"}, linkOnly: true, uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/2/"},
			{entry: bmc.LogEntry{ID: "3"}, linkOnly: true, uri: "/redfish/v1/Systems/1/LogServices/IML/Entries/3/"},
		}}},
		{"crayex-sel-entries.json", nil, entriesPage{Entries: []pageEntry{
			{entry: bmc.LogEntry{ID: "1", Severity: bmc.SeverityOK, Message: "Node power on", MessageID: "CrayAlerts.1.0.NodePowerOn", Type: "SEL"},
				uri: "/redfish/v1/Systems/Node0/LogServices/SEL/Entries/1"},
			{entry: bmc.LogEntry{ID: "2", Severity: bmc.SeverityWarning, Message: "CPU 0 VR temperature high", MessageID: "CrayAlerts.1.0.VRTempHigh", Type: "SEL"},
				uri: "/redfish/v1/Systems/Node0/LogServices/SEL/Entries/2"},
		}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			body := c.body
			if body == nil {
				body = readLogShape(t, c.file)
			}
			got, err := decodeEntriesPage(body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("decoded %+v\nwant    %+v", got, c.want)
			}
		})
	}
	// iLO's own words, should a firmware put them at the top (none of the
	// published payloads does: they are in Oem.Hpe.Severity there).
	for word, sev := range map[string]bmc.Severity{"Critical": bmc.SeverityCritical, "Caution": bmc.SeverityWarning, "Informational": bmc.SeverityOK, "Bogus": bmc.SeverityUnknown} {
		p, err := decodeEntriesPage([]byte(`{"Members":[{"Id":"9","Severity":"` + word + `"}]}`))
		if err != nil || p.Entries[0].entry.Severity != sev || p.Entries[0].entry.Resolved {
			t.Fatalf("Severity %q: %+v, %v; want %q, not resolved", word, p, err, sev)
		}
	}
}

// TestDecodeRealHealth reads the Status of the DMTF mockup's system and
// chassis (testdata/health/README.md) as Health and the monitor's
// SystemStatus read them.
func TestDecodeRealHealth(t *testing.T) {
	for _, c := range []struct {
		file string
		want bmc.ResourceHealth
	}{
		{"dmtf-system-437XR1138R2.json", bmc.ResourceHealth{ID: "437XR1138R2", Health: bmc.HealthOK, Rollup: bmc.HealthOK}},
		// The chassis gives no HealthRollup: unknown, not OK.
		{"dmtf-chassis-1U.json", bmc.ResourceHealth{ID: "1U", Health: bmc.HealthOK, Rollup: bmc.HealthUnknown}},
		// sushy-tools spells it HealthRollUp: JSON's case-insensitive
		// field match reads it as the rollup.
		{"sushy-tools-system.json", bmc.ResourceHealth{ID: "da69abcc-dae0-4913-9a7b-d344043097c0", Health: bmc.HealthOK, Rollup: bmc.HealthOK}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "health", c.file))
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			ID     string `json:"Id"`
			Status *healthStatus
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if got := resourceHealth(res.ID, res.Status); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.file, got, c.want)
		}
		if !strings.Contains(c.file, "system") {
			continue
		}
		// A system is read by the driver's own decoder (SystemStatus).
		doc, err := parseSystem(b, "")
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if got := resourceHealth(doc.ID, doc.Status); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s through parseSystem: %+v, want %+v", c.file, got, c.want)
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
	for _, n := range []string{"ilo5-iml-entries.json", "ilo5-iml-entry.json", "ilo6-iml-entries.json", "ilo6-iml-entry-repaired.json",
		"openbmc-eventlog-entries.json", "dmtf-sel-entries.json", "crayex-sel-entries.json"} {
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
