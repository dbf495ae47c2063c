package kubetest_test

import (
	"fmt"

	"github.com/bmckit/bmckit/contrib/kubernetes/kubetest"
)

// Format prints API call counts (as Calls collects them per verb and
// resource) in a stable order for test logs and docs.
func ExampleFormat() {
	fmt.Println(kubetest.Format(map[string]int{"PATCH bmcjobs/status": 6, "GET leases": 3, "PATCH bmcjobs": 2}))
	// Output: GET leases=3, PATCH bmcjobs=2, PATCH bmcjobs/status=6
}
