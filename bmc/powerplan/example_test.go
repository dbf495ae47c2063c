package powerplan_test

import (
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/powerplan"
)

// A driver reads the power state, then sends the one request Plan names.
func ExamplePlan() {
	for _, c := range []struct {
		now    bmc.PowerState
		action bmc.PowerAction
	}{{bmc.PowerOn, bmc.PowerActionOn}, {bmc.PowerOff, bmc.PowerActionCycle}, {bmc.PowerOn, bmc.PowerActionCycle}} {
		step, err := powerplan.Plan(c.now, c.action)
		fmt.Printf("%s + %s -> %q %v\n", c.now, c.action, step, err)
	}
	// Output:
	// On + on -> "" <nil>
	// Off + cycle -> "on" <nil>
	// On + cycle -> "cycle" <nil>
}
