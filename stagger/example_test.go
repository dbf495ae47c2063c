package stagger_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/stagger"
	"github.com/bmckit/bmckit/storage/memstore"
)

// manualClock is a clock the example moves by hand.
type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time { return c.now }

func Example() {
	ctx := context.Background()
	clk := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	racks := map[string]string{"10.0.0.1": "rack-a", "10.0.0.2": "rack-a", "10.0.0.3": "rack-a"}
	lim, err := stagger.New(stagger.Config{
		Store: memstore.New(),
		// A SystemKey starts with the BMC's host; systems in no rack are not limited.
		Group:    func(system string) string { return racks[strings.Split(system, ":")[0]] },
		Limit:    2,
		Interval: 5 * time.Second,
		Clock:    clk,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	admit := func(host string) {
		wait, err := lim.Admit(ctx, host+":443/redfish/v1/Systems/1", "power-on-"+host, 0)
		fmt.Printf("t=%s %s: wait %v %v\n", clk.now.Format("05"), host, wait, err)
	}
	admit("10.0.0.1") // slot 1
	clk.now = clk.now.Add(time.Second)
	admit("10.0.0.2") // slot 2
	clk.now = clk.now.Add(time.Second)
	admit("10.0.0.3") // full until 10.0.0.1's admission is 5s old
	admit("10.0.0.9") // in no rack
	clk.now = clk.now.Add(3 * time.Second)
	admit("10.0.0.3")
	admit("10.0.0.3") // a retried step: no second slot
	// Output:
	// t=00 10.0.0.1: wait 0s <nil>
	// t=01 10.0.0.2: wait 0s <nil>
	// t=02 10.0.0.3: wait 3s <nil>
	// t=02 10.0.0.9: wait 0s <nil>
	// t=05 10.0.0.3: wait 0s <nil>
	// t=05 10.0.0.3: wait 0s <nil>
}
