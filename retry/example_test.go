package retry_test

import (
	"fmt"
	"time"

	"github.com/bmckit/bmckit/retry"
)

// Delays double from Initial up to Max, each varied by up to ±Jitter.
func ExamplePolicy_Delay() {
	p := retry.Policy{Initial: time.Second, Max: 8 * time.Second, Jitter: 0.2}
	nominal := time.Second
	for attempt := 1; attempt <= 5; attempt++ {
		d := p.Delay(attempt)
		within := d >= nominal*8/10 && d <= nominal*12/10
		fmt.Printf("retry %d: %s ±20%%: %v\n", attempt, nominal, within)
		nominal = min(2*nominal, p.Max)
	}
	// Output:
	// retry 1: 1s ±20%: true
	// retry 2: 2s ±20%: true
	// retry 3: 4s ±20%: true
	// retry 4: 8s ±20%: true
	// retry 5: 8s ±20%: true
}
