package redfish_test

import (
	"context"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// A read made under a bmc.ReadScope serves SetPower's pre-read and
// BootOverride in the same scope until an action is sent; PowerState
// always reads; without a scope, or under another, everything reads.
func TestReadScopeReuse(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "1", false)
	srv.SetPower("1", "On")
	base := context.Background()
	gets := func() int { return countRequests(srv, "GET") }
	step := func(name string, want int, fn func()) {
		t.Helper()
		n := gets()
		fn()
		if got := gets() - n; got != want {
			t.Fatalf("%s: %d GETs, want %d:\n%s", name, got, want, trace(srv.Requests()))
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Dial's read was made under no scope: not reused.
	scope := bmc.WithReadScope(base)
	step("BootOverride after a read under no scope", 1, func() { _, err := drv.BootOverride(scope); must(err) })
	step("BootOverride again in the scope", 0, func() { _, err := drv.BootOverride(scope); must(err) })
	step("PowerState always reads", 1, func() { _, err := drv.PowerState(scope); must(err) })
	// The server changes behind the driver's back: a poll sees it, a
	// pre-read in the same scope uses that poll.
	srv.SetPower("1", "Off")
	step("poll", 1, func() {
		st, err := drv.PowerState(scope)
		must(err)
		if st != bmc.PowerOff {
			t.Fatalf("poll read %s, want Off", st)
		}
	})
	step("SetPower off on an Off server, from the poll", 0, func() { must(drv.SetPower(scope, bmc.PowerActionOff)) })
	if n := srv.System("1").Resets; len(n) != 0 {
		t.Fatalf("resets %v for an Off server", n)
	}
	// An action: the next reads go to the BMC.
	step("SetPower on, from the poll", 0, func() { must(drv.SetPower(scope, bmc.PowerActionOn)) })
	step("BootOverride after an action", 1, func() { _, err := drv.BootOverride(scope); must(err) })
	step("SetBootOverride reads back after its PATCH", 1, func() {
		must(drv.SetBootOverride(scope, bmc.BootOverride{Device: bmc.BootDevicePXE}))
	})
	step("BootOverride right after, from the read-back", 0, func() {
		o, err := drv.BootOverride(scope)
		must(err)
		if o.Device != bmc.BootDevicePXE {
			t.Fatalf("read %+v", o)
		}
	})
	// Another scope (the next job step) or none: reads again.
	step("another scope", 1, func() { _, err := drv.BootOverride(bmc.WithReadScope(base)); must(err) })
	step("no scope", 1, func() { must(drv.SetPower(base, bmc.PowerActionOn)) })
}
