package conditions_test

import (
	"fmt"
	"time"

	"github.com/bmckit/bmckit/conditions"
)

func Example() {
	var conds []conditions.Condition
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	conditions.MarkPending(&conds, 1, start)
	conditions.MarkRunning(&conds, 1, "power off", start.Add(2*time.Second))
	changed := conditions.MarkRunning(&conds, 1, "power off", start.Add(3*time.Second))
	fmt.Println("repeat changed anything:", changed)

	// The outcome goes into the object's Result field; the conditions only
	// say the object finished.
	result := conditions.ResultFailed
	conditions.MarkCompleted(&conds, 1, result, conditions.ReasonBMCError,
		"task 0 (power off): bmc set power on redfish://10.0.0.5: connection refused", start.Add(90*time.Second+500*time.Millisecond))

	for _, c := range conds {
		fmt.Printf("%s=%s reason=%s since=%s\n", c.Type, c.Status, c.Reason, c.LastTransitionTime.Format(time.TimeOnly))
	}
	fmt.Println("completed:", conditions.IsTrue(conds, conditions.TypeCompleted), "result:", result)
	// Output:
	// repeat changed anything: false
	// Completed=True reason=BMCError since=10:01:30
	// Running=False reason=BMCError since=10:01:30
	// completed: true result: Failed
}
