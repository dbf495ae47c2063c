package clock_test

import (
	"fmt"
	"time"

	"github.com/bmckit/bmckit/clock"
)

// A Fake clock moves only when the test advances it: a timeout of a
// minute passes without waiting a minute.
func ExampleFake() {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewFake(start)
	timeout := clk.After(time.Minute)

	clk.Advance(30 * time.Second)
	select {
	case <-timeout:
		fmt.Println("fired early")
	default:
		fmt.Println("30s: not yet")
	}

	clk.Advance(30 * time.Second)
	at := <-timeout
	fmt.Println("fired after", at.Sub(start))
	fmt.Println("waiters left:", clk.Waiters())
	// Output:
	// 30s: not yet
	// fired after 1m0s
	// waiters left: 0
}
