package monitor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage/memstore"
)

// A BMC that cannot push has its logs polled into the event store
// (Config.EventLogs); a Critical entry becomes the CriticalBMCEvent
// condition on the machine's record (Config.Events).
func Example_criticalEvents() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := fake.NewFleet()
	const url = "redfish://10.0.0.1/redfish/v1/Systems/1"
	// Its SEL holds a Critical entry (fake.DefaultLogs).
	if _, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOn}); err != nil {
		panic(err)
	}
	store := memstore.New()
	src, err := bmcevents.NewSource(bmcevents.SourceConfig{Store: store})
	if err != nil {
		panic(err)
	}
	set := make(chan monitor.CriticalEvent, 1)
	mon, err := monitor.New(monitor.Config{
		Store: store, Dialer: fleet,
		EventLogs:    src,                          // no Subscriptions: poll every BMC's logs
		Events:       bmcevents.NewFollower(store), // critical events → condition
		ScanInterval: 10 * time.Millisecond,
		Observer: monitor.Observer{CriticalEvent: func(e monitor.CriticalEvent) {
			select {
			case set <- e:
			default:
			}
		}},
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- mon.Start(ctx) }()
	if _, err := mon.Add(ctx, url, ""); err != nil {
		panic(err)
	}
	select {
	case e := <-set:
		fmt.Println(e.Source, len(e.Events), "critical event")
	case <-time.After(30 * time.Second):
		panic("no critical event was set")
	}
	mc, err := mon.Get(ctx, url)
	if err != nil {
		panic(err)
	}
	c := conditions.Get(mc.Status.Conditions, monitor.TypeCriticalBMCEvent)
	fmt.Println(c.Type, c.Status, c.Reason)
	fmt.Println(c.Message)
	cancel()
	<-done
	// Output:
	// 10.0.0.1_443 1 critical event
	// CriticalBMCEvent True Critical
	// 1 critical BMC event(s); latest SEL.PowerSupply.0x03 on the BMC at 2026-01-01T00:02:00Z: PSU 2 input lost
}
