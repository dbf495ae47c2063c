package controller_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// JobFor gives the job a BMCJob stands for: named namespace/name, with the
// credentials reference qualified by the namespace, so a BMCJob can only
// use Secrets of its own namespace.
func ExampleJobFor() {
	obj := &v1alpha1.BMCJob{
		ObjectMeta: metav1.ObjectMeta{Name: "netboot", Namespace: "rack1"},
		Spec: v1alpha1.BMCJobSpec{Spec: job.Spec{
			BMC:            "redfish://10.0.0.5/redfish/v1/Systems/1",
			CredentialsRef: "bmc-secret",
			Tasks:          []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}},
		}},
	}
	j := controller.JobFor(obj)
	fmt.Println(j.Name, j.Spec.CredentialsRef)
	// Output:
	// rack1/netboot rack1/bmc-secret
}

// Requeue turns a job step's answer into the reconciler's result.
func ExampleRequeue() {
	fmt.Println(controller.Requeue(job.StepResult{Done: true}).RequeueAfter)
	fmt.Println(controller.Requeue(job.StepResult{RequeueAfter: 2 * time.Second}).RequeueAfter)
	// Output:
	// 0s
	// 2s
}
