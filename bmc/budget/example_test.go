package budget_test

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc/budget"
)

// A driver keeps one Set per Dialer; each session takes the budget of its
// endpoint and waits its turn before every request.
func Example() {
	set := budget.NewSet(50, 10) // 50 requests/s per endpoint
	b, release := set.Acquire("10.0.0.5:443")
	defer release()
	var c budget.Counter // the driver's bmc.Stats counters
	for range 3 {
		if err := c.Wait(context.Background(), b); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("endpoints:", set.Len(), "throttled:", c.Throttled())
	// Output: endpoints: 1 throttled: 0
}
