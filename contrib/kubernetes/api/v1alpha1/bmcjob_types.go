package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bmckit/bmckit/job"
)

// Admission rules of BMCJobSpec (CEL, x-kubernetes-validations of spec).
// They refuse at admission (422, naming the field) what the runtime
// (job.Spec.Validate) would refuse and CEL checks cheaply. They are on this
// type, not on job.Spec: spec.bmc is held to the schemes bmc.ParseEndpoint
// accepts, and a host that registers its own schemes embeds job.Spec in its
// own CRD (docs/kubernetes.md, "Admission: spec.bmc and the tasks", has the
// rules to copy). They sit on spec, not on its strings, and have fixed
// messages: the API server would put a string's value into the error, and
// an address may hold a password. url() runs only where it cannot fail (a
// scheme, "://", no '#', isURL): its error quotes the string.
//
// spec.bmc, as bmc.ParseEndpoint:
//
// +kubebuilder:validation:XValidation:rule="!self.bmc.contains('@') && !self.bmc.matches('(?i)^[^?#]*[?]([^#]*&)?([^=&#]*(pass|pwd|secret|token|user|login|auth|cred|key)[^=&#]*|pw|p|u)(=|&|#|$)')",message="credentials are not accepted in the BMC address (user info before '@', or an option such as password=): put them in the Secret that credentialsRef names",fieldPath=".bmc"
// +kubebuilder:validation:XValidation:rule="self.bmc.matches('^[a-zA-Z][a-zA-Z0-9+.-]*://[^#]*$') && isURL(self.bmc) && url(self.bmc).getScheme() in ['redfish', 'redfish+https', 'redfish+http', 'ipmi'] && url(self.bmc).getHostname() != ''",message="want a URL scheme://host[:port][/path] with scheme redfish, redfish+https, redfish+http or ipmi, e.g. redfish://10.0.0.5/redfish/v1/Systems/1 or ipmi://10.0.0.6",fieldPath=".bmc"
// +kubebuilder:validation:XValidation:rule="!self.bmc.matches('^[^/]*//[^/?#]*:([/?#]|$)') && (!(self.bmc.matches('^[a-zA-Z][a-zA-Z0-9+.-]*://[^#]*$') && isURL(self.bmc)) || url(self.bmc).getPort() == '' || (url(self.bmc).getPort().size() <= 5 && int(url(self.bmc).getPort()) >= 1 && int(url(self.bmc).getPort()) <= 65535))",message="the port must be a number from 1 to 65535",fieldPath=".bmc"
// +kubebuilder:validation:XValidation:rule="!self.bmc.matches('^[^/]*//((:|[^/?#[][^/?#]*:)[^/?#]*:|[[][^]/?#]*%)')",message="an IPv6 address must be in brackets and without a zone, e.g. redfish://[fd00::5]:443",fieldPath=".bmc"
// +kubebuilder:validation:XValidation:rule="!self.bmc.contains('#') && (!(self.bmc.matches('^[a-zA-Z][a-zA-Z0-9+.-]*://[^#]*$') && isURL(self.bmc)) || (url(self.bmc).getScheme() == 'ipmi' ? self.bmc.matches('^[^/]*//[^/?#]*/*([?].*)?$') : (!(url(self.bmc).getScheme() in ['redfish', 'redfish+https', 'redfish+http']) || self.bmc.matches('^[^/]*//[^/?#]*(/*|/redfish/v1/Systems(/[^?]*)?)([?].*)?$'))))",message="the path must be /redfish/v1/Systems/<ID> or none for redfish, none for ipmi, and no fragment (#)",fieldPath=".bmc"
//
// spec.tasks, as task.Spec.Validate and job.Spec.Validate:
//
// +kubebuilder:validation:XValidation:rule="has(self.systemUUID) || self.tasks.all(t, !has(t.waitForBoot) || has(t.waitForBoot.systemUUID))",message="a waitForBoot task needs a systemUUID: set spec.systemUUID or the task's waitForBoot.systemUUID",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.bootDevice) || !has(t.bootDevice.uri) || (!t.bootDevice.uri.contains('@') && !t.bootDevice.uri.contains(' ') && t.bootDevice.uri.matches('(?i)^https?://[^#]*$') && isURL(t.bootDevice.uri) && url(t.bootDevice.uri).getHostname() != ''))",message="a bootDevice task's uri must be an http:// or https:// URL with a host, without spaces, credentials or a fragment (#)",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.firmwareUpdate) || (!t.firmwareUpdate.imageURI.contains('@') && t.firmwareUpdate.imageURI.matches('(?i)^https?://[^#]*$') && isURL(t.firmwareUpdate.imageURI) && url(t.firmwareUpdate.imageURI).getHostname() != ''))",message="a firmwareUpdate task's imageURI must be an http:// or https:// URL with a host, without user info or a fragment (#) (a pre-signed query is accepted)",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.firmwareUpdate) || (t.firmwareUpdate.component != '' && !t.firmwareUpdate.component.matches('[/?#]') && t.firmwareUpdate.version != ''))",message="a firmwareUpdate task needs a component (a firmware inventory ID, not a path) and a version",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.bios) || !has(t.bios.verifyOnly) || !t.bios.verifyOnly || (has(t.bios.attributes) && size(t.bios.attributes) > 0))",message="a bios task with verifyOnly needs attributes to verify",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.waitForBoot) || !has(t.waitForBoot.mode) || (has(t.waitForBoot.signals) && size(t.waitForBoot.signals) > 0))",message="a waitForBoot task with a mode needs signals",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.waitForBoot) || !has(t.waitForBoot.deadlines) || size(t.waitForBoot.deadlines) == 0 || !has(t.waitForBoot.deadlines[0].from) || t.waitForBoot.deadlines[0].from != 'PreviousSignal')",message="a waitForBoot task's first deadline cannot be from PreviousSignal: use AttemptStart",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, (!has(t.timeout) || duration(t.timeout) <= duration('168h')) && (!has(t.waitForBoot) || !has(t.waitForBoot.retryBackoff) || duration(t.waitForBoot.retryBackoff) <= duration('1h')))",message="a task's timeout must be at most 7 days (168h), and a waitForBoot task's retryBackoff at most 1h",fieldPath=".tasks"

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
