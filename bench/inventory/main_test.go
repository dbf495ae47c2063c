package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain runs the simulator child when the test binary is started as one
// (startSims runs os.Executable, the test binary under go test).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := serve(os.Args[1:], os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString("simulators: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The benchmark still runs end to end, small: every job succeeds with its
// own system's inventory, the simulators' logs reach every system, and
// $expand costs fewer requests than one GET per member.
func TestSmallRun(t *testing.T) {
	perSystem := map[bool]float64{}
	for _, expand := range []bool{false, true} {
		res, err := run(config{protocol: "redfish", n: 6, endpoints: 2, expand: expand, timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.problems) > 0 || res.failed > 0 {
			t.Fatalf("$expand %v: %d answers not 2xx, problems: %s", expand, res.failed, strings.Join(res.problems, "; "))
		}
		if len(res.record) != 6 || len(res.invJSON) != 6 || len(res.wire) != 6 {
			t.Fatalf("$expand %v: %d records, %d inventories, %d wire counts, want 6 each", expand, len(res.record), len(res.invJSON), len(res.wire))
		}
		var wire int64
		for _, w := range res.wire {
			wire += w
		}
		// The jobs' own counts add up to what the simulators saw.
		if wire != int64(res.requests) {
			t.Errorf("$expand %v: Status.Wire sums to %d requests, the simulators logged %d", expand, wire, res.requests)
		}
		if res.logins != 2 {
			t.Errorf("$expand %v: %d logins, want one per endpoint", expand, res.logins)
		}
		perSystem[expand] = float64(res.requests) / 6
	}
	if perSystem[true] >= perSystem[false] {
		t.Errorf("requests per system: %.2f with $expand, %.2f without; want fewer with", perSystem[true], perSystem[false])
	}
}

// IPMI: every job reads its own BMC's FRU; the commands are the jobs' own
// counts.
func TestSmallRunIPMI(t *testing.T) {
	res, err := run(config{protocol: "ipmi", n: 3, endpoints: 3, timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.problems) > 0 {
		t.Fatalf("problems: %s", strings.Join(res.problems, "; "))
	}
	if len(res.wire) != 3 || res.requests == 0 {
		t.Fatalf("%d wire counts, %d commands; want 3 jobs' counts", len(res.wire), res.requests)
	}
	if res.logins != 3 {
		t.Errorf("%d sessions opened, want one per BMC", res.logins)
	}
}

func TestPathKind(t *testing.T) {
	for _, c := range []struct{ path, kind, system string }{
		{"/redfish/v1/", "/redfish/v1/", ""},
		{"/redfish/v1/Systems/12/Storage/1/Drives/2", "/redfish/v1/Systems/{id}/Storage/{m}/Drives/{m}", "12"},
		{"/redfish/v1/UpdateService/FirmwareInventory/BMC", "/redfish/v1/UpdateService/FirmwareInventory/{m}", ""},
		{"/redfish/v1/SessionService/Sessions/7", "/redfish/v1/SessionService/Sessions/{m}", ""},
	} {
		if k, s := pathKind(c.path); k != c.kind || s != c.system {
			t.Errorf("pathKind(%q) = %q, %q; want %q, %q", c.path, k, s, c.kind, c.system)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	for _, c := range []struct{ eps, exp, want string }{
		{"3", "off", `"3" is not a count`},
		{"2", "maybe", `"maybe" is neither off nor on`},
	} {
		err := runAll(nil, 10, c.eps, c.exp, false, 1, config{timeout: time.Minute})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("-endpoints %s -expand %s: got %v, want an error with %s", c.eps, c.exp, err, c.want)
		}
	}
}
