package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bmckit/bmckit/job"
)

// BMCJobSpec is what the job should do: a bmckit job.Spec (the BMC's
// address, a credentials reference, the tasks in order, a timeout), inline,
// so that the object reads spec.bmc and spec.tasks. A host adds its own
// fields beside the embedded spec.
type BMCJobSpec struct {
	job.Spec `json:",inline"`
}

// BMCJobStatus is what happened: a bmckit job.Status, inline, so that its
// conditions are at .status.conditions (a list keyed by type) where
// `kubectl wait --for=condition=Completed` looks. The outcome is in
// .status.result with .status.reason and .status.message.
type BMCJobStatus struct {
	job.Status `json:",inline"`
}

// BMCJob runs an ordered list of tasks (power, boot device, virtual media,
// wait for boot, ...) against one BMC.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bmcj,categories=bmckit
// +kubebuilder:printcolumn:name="BMC",type=string,JSONPath=`.spec.bmc`
// +kubebuilder:printcolumn:name="Completed",type=string,JSONPath=`.status.conditions[?(@.type=="Completed")].status`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.result`
// +kubebuilder:printcolumn:name="Task",type=integer,JSONPath=`.status.currentTask`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BMCJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BMCJobSpec   `json:"spec"`
	Status BMCJobStatus `json:"status,omitempty"`
}

// BMCJobList is a list of BMCJobs.
//
// +kubebuilder:object:root=true
type BMCJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BMCJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BMCJob{}, &BMCJobList{})
}

// JobSpec gives contrib/kubernetes/controller the embedded job.Spec.
func (o *BMCJob) JobSpec() *job.Spec { return &o.Spec.Spec }

// JobStatus gives contrib/kubernetes/controller the embedded job.Status.
func (o *BMCJob) JobStatus() *job.Status { return &o.Status.Status }
