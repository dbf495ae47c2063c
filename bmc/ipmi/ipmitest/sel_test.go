package ipmitest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// TestSELWithIpmitool: an independent client reads, adds to and clears the
// simulator's SEL: ipmitool lists what a test added (IDs, sensors, events),
// "sel add" records what it sends, and "sel clear" (reservation, erase,
// status) empties it.
func TestSELWithIpmitool(t *testing.T) {
	t.Parallel()
	sim, p := simPeer(t, ipmitest.Options{SELErasePolls: 1})
	run := func(args ...string) string {
		t.Helper()
		out, err := ipmitool(t, p, p.creds.Username, p.creds.Password, args...)
		if err != nil {
			t.Fatalf("ipmitool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	sim.SEL().AddEvent(ipmitest.SELEvent{SensorType: 0x01, SensorNumber: 0x30, EventType: 0x01, EventData: [3]byte{0x02}})
	sim.SEL().AddEvent(ipmitest.SELEvent{SensorType: 0x08, SensorNumber: 0x02, EventType: 0x6f, EventData: [3]byte{0x01}})
	sim.SEL().Add(0xe0, [13]byte{0: 0xde, 1: 0xad})
	events := filepath.Join(t.TempDir(), "events")
	if err := os.WriteFile(events, []byte("0x04 0x04 0x41 0x81 0x59 0x00 0x00\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("sel", "add", events)
	recs := sim.SEL().Records()
	if len(recs) != 4 || recs[3].Type != 0x02 || recs[3].Data[7] != 0x04 || recs[3].Data[8] != 0x41 || recs[3].Data[9] != 0x81 || recs[3].Data[10] != 0x59 {
		t.Fatalf("after ipmitool sel add the SEL holds %+v", recs)
	}
	list := run("sel", "list")
	for _, want := range []string{
		`(?m)^\s*1 \|.*\| Temperature #0x30 \| Lower Critical going low\s*\| Asserted`,
		`(?m)^\s*2 \|.*\| Power Supply #0x02 \| Failure detected\s*\| Asserted`,
		`(?m)^\s*3 \| OEM record e0 \| dead`,
		`(?m)^\s*4 \|.*\| Fan #0x41 \| Upper Critical going high\s*\| Deasserted`,
	} {
		if !regexp.MustCompile(want).MatchString(list) {
			t.Errorf("ipmitool sel list does not match %s:\n%s", want, list)
		}
	}
	if info := run("sel", "info"); !regexp.MustCompile(`Entries\s*: 4\n`).MatchString(info) {
		t.Errorf("ipmitool sel info:\n%s", info)
	}
	run("sel", "clear")
	if n := len(sim.SEL().Records()); n != 0 {
		t.Errorf("after ipmitool sel clear the SEL holds %d records", n)
	}
	if info := run("sel", "info"); !regexp.MustCompile(`Entries\s*: 0\n`).MatchString(info) {
		t.Errorf("ipmitool sel info after the clear:\n%s", info)
	}
}
