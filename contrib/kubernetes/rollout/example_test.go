package rollout_test

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/bmckit/bmckit/contrib/kubernetes/rollout"
	"github.com/bmckit/bmckit/job"
)

// Setup adds the BMCRollout controller beside the kit's BMCJob controller,
// whose Stepper answers the skip check. (Compiled, not run: it needs a
// manager and an API server; see examples/controller, which runs it.)
func ExampleSetup() {
	run := func(mgr ctrl.Manager, stepper *job.Stepper) error {
		_, err := rollout.Setup(mgr, rollout.Options{Stepper: stepper})
		return err
	}
	_ = run
}
