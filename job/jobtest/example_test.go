package jobtest_test

import (
	"fmt"
	"time"

	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/task"
)

// HoldsSecret checks output for a password: a short password counts only
// where it stands alone, so "p" is not found in "pxe" but is in "pw=p".
func ExampleHoldsSecret() {
	fmt.Println(jobtest.HoldsSecret("task 2/3 boot pxe: done", "p"))
	fmt.Println(jobtest.HoldsSecret(`login failed: pw="p"`, "p"))
	fmt.Println(jobtest.HoldsSecret("dial: Tr0ub4dor-and-3 refused", "Tr0ub4dor-and-3"))
	// Output:
	// false
	// true
	// true
}

// Netboot is the job the driver tests run.
func ExampleNetboot() {
	spec := jobtest.Netboot("redfish://10.0.0.5/redfish/v1/Systems/1", task.BootModeUEFI, 5*time.Minute)
	for _, ts := range spec.Tasks {
		fmt.Println(ts.Describe(), ts.Timeout.Duration)
	}
	fmt.Println("credentials:", spec.CredentialsRef, "valid:", spec.Validate() == nil)
	// Output:
	// power off 5m0s
	// boot pxe (once, uefi) 5m0s
	// power on 5m0s
	// credentials: lab valid: true
}
