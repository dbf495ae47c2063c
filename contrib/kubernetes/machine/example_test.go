package machine_test

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/contrib/kubernetes/machine"
)

// Setup adds the machine monitor to a manager: it runs on the leader only
// and writes each Machine's Contactable condition, power state and last
// read into its status. (Compiled, not run: it needs a manager and an API
// server; see examples/controller.)
func ExampleSetup() {
	run := func(mgr ctrl.Manager, dialer bmc.Dialer) error {
		_, err := machine.Setup(mgr, machine.Options{Dialer: dialer, Interval: time.Minute})
		return err
	}
	_ = run
}
