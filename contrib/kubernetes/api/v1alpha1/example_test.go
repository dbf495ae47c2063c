package v1alpha1_test

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// A BMCJob embeds bmckit's job.Spec inline, so the object reads spec.bmc
// and spec.tasks; DeepCopy gives an independent object.
func ExampleBMCJob() {
	obj := &v1alpha1.BMCJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "bmckit.io/v1alpha1", Kind: "BMCJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "netboot", Namespace: "rack1"},
		Spec: v1alpha1.BMCJobSpec{Spec: job.Spec{
			BMC:            "redfish://10.0.0.5/redfish/v1/Systems/1",
			CredentialsRef: "bmc-secret",
			Tasks:          []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}},
		}},
	}
	out, err := json.Marshal(obj.Spec)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))

	cp := obj.DeepCopy()
	cp.Spec.Tasks[0].Power.Op = task.PowerOn
	fmt.Println(obj.Spec.Tasks[0].Describe(), "/", cp.Spec.Tasks[0].Describe())
	// Output:
	// {"bmc":"redfish://10.0.0.5/redfish/v1/Systems/1","credentialsRef":"bmc-secret","tasks":[{"power":{"op":"off"}}]}
	// power off / power on
}
