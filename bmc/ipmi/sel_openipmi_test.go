package ipmi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// runIpmitool runs ipmitool against ipmi_sim (suite 3, password through
// the environment, times in UTC) and fails the test on an error.
func runIpmitool(t *testing.T, sim *ipmitest.OpenIPMI, args ...string) string {
	t.Helper()
	out, err := ipmitoolAs(t, sim, sim.Credentials, args...)
	if err != nil {
		t.Fatalf("ipmitool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// ipmitoolAs runs ipmitool against ipmi_sim logged in with creds (the
// password through the environment, never on the command line) and
// returns its standard output and error.
func ipmitoolAs(t *testing.T, sim *ipmitest.OpenIPMI, creds bmc.Credentials, args ...string) (string, error) {
	t.Helper()
	bin := ipmitest.RequireProgram(t, "ipmitool", "ipmitool")
	base := []string{"-I", "lanplus", "-H", sim.Endpoint.Host, "-p", strconv.Itoa(sim.Endpoint.Port), "-U", creds.Username, "-E", "-C", "3", "-N", "2", "-R", "3"}
	cmd := exec.CommandContext(t.Context(), bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), "IPMITOOL_PASSWORD="+creds.Password, "TZ=UTC")
	out, err := cmd.Output() // stderr: ipmitool's complaints about the SDR ipmi_sim lacks
	return string(out), err
}

// ipmitoolSEL is one record as ipmitool's "sel list" and "sel get" show it.
type ipmitoolSEL struct {
	id      int
	created time.Time // zero: "Pre-Init" or no timestamp
	fields  map[string]string
}

var (
	selListLine = regexp.MustCompile(`^\s*([0-9a-f]+) \|\s*(?:(\d\d/\d\d/\d\d) \| (\d\d:\d\d:\d\d) UTC|Pre-Init\s*\|\s*\d+|(OEM record e))`)
	selGetField = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z ]*?)\s*: (.*)$`)
)

// ipmitoolSELs reads the SEL as ipmitool lists it, oldest first.
func ipmitoolSELs(t *testing.T, sim *ipmitest.OpenIPMI) []ipmitoolSEL {
	t.Helper()
	var out []ipmitoolSEL
	list := strings.TrimSpace(runIpmitool(t, sim, "sel", "list"))
	if list == "" || strings.Contains(list, "SEL has no entries") {
		return nil
	}
	for _, line := range strings.Split(list, "\n") {
		m := selListLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("ipmitool sel list: cannot parse %q", line)
		}
		id, _ := strconv.ParseInt(m[1], 16, 32)
		r := ipmitoolSEL{id: int(id), fields: map[string]string{}}
		if m[2] != "" {
			var err error
			if r.created, err = time.Parse("01/02/06 15:04:05", m[2]+" "+m[3]); err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range strings.Split(runIpmitool(t, sim, "sel", "get", strconv.Itoa(r.id)), "\n") {
			if f := selGetField.FindStringSubmatch(l); f != nil {
				r.fields[f[1]] = strings.TrimSpace(f[2])
			}
		}
		out = append(out, r)
	}
	return out
}

// describes reports whether msg has every word of ipmitool's description
// of an event (ipmitool's and freeipmi's names of an event differ in
// dashes and in words added: "Correctable ECC logging limit reached",
// "Correctable ECC / other correctable memory error logging limit
// reached").
func describes(msg, desc string) bool {
	words := strings.Fields(strings.ToLower(strings.NewReplacer("-", " ", ",", " ").Replace(msg)))
	for _, w := range strings.Fields(strings.ToLower(desc)) {
		if !slices.Contains(words, w) {
			return false
		}
	}
	return desc != ""
}

// TestSELMatchesIpmitool reads ipmi_sim's SEL through the driver and
// compares every entry with what ipmitool's "sel list" and "sel get" show
// for it: system events logged before the SEL time was set ("Pre-Init")
// and after, asserted and deasserted, threshold and sensor-specific, and
// OEM records with and without a timestamp. Then ClearLog empties it as
// ipmitool sees it.
func TestSELMatchesIpmitool(t *testing.T) {
	t.Parallel()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	drv, err := dialer(t, sim.DialOptions()).Open(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(t.Context())

	// Event lines for "sel add": EvM revision, sensor type, sensor
	// number, event direction/type, event data 1-3.
	events := filepath.Join(t.TempDir(), "events")
	if err := os.WriteFile(events, []byte(strings.Join([]string{
		"0x04 0x01 0x30 0x01 0x52 0x00 0x00", // temperature, lower critical going low
		"0x04 0x08 0x02 0x6f 0x01 0x00 0x00", // power supply failure
		"0x04 0x04 0x41 0x81 0x59 0x00 0x00", // fan, upper critical going high, deasserted
		"0x04 0x0c 0x07 0x6f 0x05 0x00 0x00", // memory, correctable ECC logging limit
	}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runIpmitool(t, sim, "sel", "add", events) // stamped "Pre-Init": ipmi_sim's clock is not set
	runIpmitool(t, sim, "sel", "time", "set", "now")
	runIpmitool(t, sim, "sel", "add", events)
	runIpmitool(t, sim, "raw", "0x0a", "0x44", "0", "0", "0xc1", "0", "0", "0", "0", "0x57", "0x01", "0x00", "1", "2", "3", "4", "5", "6")
	runIpmitool(t, sim, "raw", "0x0a", "0x44", "0", "0", "0xe0", "0xde", "0xad", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "7")

	ref := bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}
	page, err := drv.LogEntries(t.Context(), ref, bmc.LogQuery{Limit: bmc.MaxLogLimit})
	if err != nil {
		t.Fatal(err)
	}
	tool := ipmitoolSELs(t, sim)
	if len(tool) != 10 || len(page.Entries) != len(tool) {
		t.Fatalf("the driver reads %d entries, ipmitool lists %d; want 10 each", len(page.Entries), len(tool))
	}
	slices.Reverse(tool) // newest first, as the driver lists them: by ID, since some have no time
	for i, want := range tool {
		got := page.Entries[i]
		f := want.fields
		if got.ID != strconv.Itoa(want.id) {
			t.Errorf("entry %d: ID %s, ipmitool lists %d", i, got.ID, want.id)
			continue
		}
		if !got.Created.Equal(want.created) {
			t.Errorf("entry %s: Created %v, ipmitool shows %v", got.ID, got.Created, want.created)
		}
		// ipmitool names the record type ("02", "c1  (OEM timestamped)").
		switch typ := strings.Fields(f["Record Type"])[0]; typ {
		case "02":
			msg := got.Message
			dir := map[string]string{"Assertion Event": "asserted", "Deassertion Event": "deasserted"}[f["Event Direction"]]
			class := map[string]string{"Threshold": ".Threshold.", "Sensor-specific Discrete": ""}[f["Event Type"]]
			data := f["Event Data"]
			for _, part := range []string{
				f["Sensor Type"] + " #0x" + strings.ToLower(f["Sensor Number"]) + ": ",
				", " + dir + " (",
				"event data " + data[0:2] + " " + data[2:4] + " " + data[4:6],
				"generator 0x" + strings.ToLower(f["Generator ID"]),
			} {
				if !strings.Contains(msg, part) {
					t.Errorf("entry %s: Message %q lacks %q (ipmitool: %v)", got.ID, msg, part, f)
				}
			}
			if !describes(msg, f["Description"]) {
				t.Errorf("entry %s: Message %q does not describe the event as ipmitool does: %q", got.ID, msg, f["Description"])
			}
			if class != "" && !strings.Contains(got.MessageID, class) || class == "" && strings.Count(got.MessageID, ".") != 2 {
				t.Errorf("entry %s: MessageID %q for event type %q", got.ID, got.MessageID, f["Event Type"])
			}
			if got.Type != "SEL" || got.Severity == bmc.SeverityUnknown {
				t.Errorf("entry %s: type %q, severity %q", got.ID, got.Type, got.Severity)
			}
		case "c1", "e0":
			msg := strings.ReplaceAll(got.Message, " ", "")
			oem := strings.Fields(f["OEM Defined"])[0]
			mfr := f["Manufactacturer ID"] // sic; none without a timestamp
			if got.Type != "Oem" || got.MessageID != "SEL.OEM.0x"+typ || !strings.Contains(msg, "data"+strings.ToLower(oem)) ||
				mfr != "" && !strings.Contains(msg, "manufacturerID0x"+strings.ToLower(mfr)) {
				t.Errorf("entry %s: %+v; ipmitool shows %v", got.ID, got, f)
			}
		default:
			t.Errorf("entry %s: ipmitool shows record type %q", got.ID, f["Record Type"])
		}
	}

	if err := drv.ClearLog(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	if tool := ipmitoolSELs(t, sim); len(tool) != 0 {
		t.Errorf("after ClearLog ipmitool lists %d entries", len(tool))
	}
	if out := runIpmitool(t, sim, "sel", "info"); !regexp.MustCompile(`Entries\s*: 0\n`).MatchString(out) {
		t.Errorf("after ClearLog ipmitool sel info says:\n%s", out)
	}
	if p, err := drv.LogEntries(t.Context(), ref, bmc.LogQuery{}); err != nil || len(p.Entries) != 0 {
		t.Errorf("after ClearLog the driver reads %+v, %v", p, err)
	}
}
