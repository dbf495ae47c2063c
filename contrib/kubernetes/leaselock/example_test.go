package leaselock_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/bmckit/bmckit/contrib/kubernetes/leaselock"
)

// A Locker keeps one Lease per system in the controller's namespace; its
// holderIdentity names the job and this replica. (A fake client here; a
// controller passes its manager's client, and Setup does this wiring.)
func ExampleNew() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	locks, err := leaselock.New(c, leaselock.Config{Namespace: "bmckit-system", Owner: "replica-a"})
	if err != nil {
		fmt.Println(err)
		return
	}
	system := "10.0.0.5:443/redfish/v1/Systems/1"
	if _, err := locks.Lock(context.Background(), system, "rack1/netboot"); err != nil {
		fmt.Println(err)
		return
	}
	// Another job on the same system waits.
	_, err = locks.Lock(context.Background(), system, "rack1/reinstall")
	fmt.Println("second job locked out:", err != nil)
	fmt.Println("unlock:", locks.Unlock(context.Background(), system, "rack1/netboot"))
	// Output:
	// second job locked out: true
	// unlock: <nil>
}
