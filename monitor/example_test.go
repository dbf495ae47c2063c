package monitor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage/memstore"
)

// A Monitor reads every machine added to it on an interval and keeps its
// Contactable condition and power state; a machine is read at once when
// added.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := fake.NewFleet()
	const up, locked = "redfish://10.0.0.1/redfish/v1/Systems/1", "redfish://10.0.0.2/redfish/v1/Systems/1"
	if _, err := fleet.AddNew(up, fake.Options{Username: "admin", Password: "pw-Mon-1", Power: bmc.PowerOn}); err != nil {
		panic(err)
	}
	if _, err := fleet.AddNew(locked, fake.Options{Username: "admin", Password: "another-one"}); err != nil {
		panic(err)
	}
	mon, err := monitor.New(monitor.Config{
		Store:       memstore.New(),
		Dialer:      fleet,
		Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "pw-Mon-1"}},
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- mon.Start(ctx) }()
	for _, u := range []string{up, locked} {
		if _, err := mon.Add(ctx, u, "lab"); err != nil {
			panic(err)
		}
	}

	// Wait (polling, with a deadline) until both were read once: until
	// then Contactable is Unknown (reason Pending).
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms, err := mon.List(ctx)
		if err != nil {
			panic(err)
		}
		read := 0
		for _, m := range ms {
			if c := m.Contactable(); c != nil && c.Status != conditions.Unknown {
				read++
			}
		}
		if read == len(ms) {
			for _, m := range ms {
				c := m.Contactable()
				fmt.Println(m.BMC, c.Status, c.Reason, m.Status.Power)
			}
			break
		}
		if time.Now().After(deadline) {
			panic("the machines were not read")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	// Output:
	// redfish://10.0.0.1/redfish/v1/Systems/1 True Contacted On
	// redfish://10.0.0.2/redfish/v1/Systems/1 False Unauthorized
}
