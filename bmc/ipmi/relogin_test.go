package ipmi_test

import (
	"context"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// TestIdleRelogin: a call after the connection sat idle longer than
// Options.IdleRelogin opens a new session first (BMCs expire idle ones).
func TestIdleRelogin(t *testing.T) {
	t.Parallel()
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	d, err := ipmi.NewDialer(ipmi.Options{IdleRelogin: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	drv, err := d.Open(context.Background(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	now := time.Now()
	ipmi.SetNow(drv, func() time.Time { return now })
	if _, err := drv.PowerState(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := drv.Stats().Logins; got != 1 {
		t.Fatalf("logins %d before idling, want 1", got)
	}
	now = now.Add(2 * time.Minute)
	if st, err := drv.PowerState(context.Background()); err != nil || st != bmc.PowerOff {
		t.Fatalf("PowerState after idling: %v, %v", st, err)
	}
	if got := drv.Stats().Logins; got != 2 {
		t.Fatalf("logins %d after idling past IdleRelogin, want 2", got)
	}
}
