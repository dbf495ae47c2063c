package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// MaxRolloutServers is how many Machines one BMCRollout may select: the
// object, with its snapshot of the servers in the status, must stay well
// under etcd's request limit (1.5 MiB). Split a larger fleet by label.
const MaxRolloutServers = 5000

// HoldAnnotation on a Machine holds it back from every rollout while its
// value is "true": the server is not started (status state "held"), is
// asked again on every pass, and the rollout does not complete while it is
// held. Remove the annotation (or set it to anything else) to release it.
const HoldAnnotation = "bmckit.io/hold"

// RolloutLabel is the label on a BMCRollout's BMCJobs: the rollout's name.
const RolloutLabel = "bmckit.io/rollout"

// Admission rules of BMCRolloutSpec: template, selector and policy are
// immutable; the selector is not empty.
//
// +kubebuilder:validation:XValidation:rule="self.template == oldSelf.template",message="template cannot change: create another BMCRollout",fieldPath=".template"
// +kubebuilder:validation:XValidation:rule="self.selector == oldSelf.selector",message="selector cannot change: create another BMCRollout",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="has(self.policy) == has(oldSelf.policy) && (!has(self.policy) || self.policy == oldSelf.policy)",message="policy cannot change: create another BMCRollout",fieldPath=".policy"
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="selector must not be empty (to select every Machine of the namespace on purpose, use matchExpressions with a label every Machine has and operator Exists)",fieldPath=".selector"

// BMCRolloutSpec is what a rollout does: one job template run on every
// Machine its selector matched when it started, under a policy, and the
// control a user changes while it runs (paused, abort, canaryApproved).
// Template, selector and policy cannot change once the object exists.
type BMCRolloutSpec struct {
	// Template is every server's job, without its BMC: the BMC and the
	// credentials come from the Machine (the template's credentialsRef is
	// used for Machines without one).
	Template RolloutTemplate `json:"template"`
	// Selector selects the Machines of the rollout's namespace. They are
	// snapshotted, sorted by name, at the rollout's first reconcile
	// (status.servers): Machines created or relabelled later are not
	// included.
	Selector metav1.LabelSelector `json:"selector"`
	// Policy bounds how the rollout goes.
	// +optional
	Policy RolloutPolicy `json:"policy,omitzero"`
	// Paused stops new servers from starting (running jobs finish) while
	// true.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Abort ends the rollout: nothing starts any more, running jobs
	// finish, then it completes with result Aborted. Setting it back to
	// false does not resume an aborting rollout.
	// +optional
	Abort bool `json:"abort,omitempty"`
	// CanaryApproved lets a rollout with policy.canaryApproval go on after
	// its canary succeeded.
	// +optional
	CanaryApproved bool `json:"canaryApproved,omitempty"`
}

// Admission rules of RolloutTemplate: the task rules of BMCJobSpec
// (docs/kubernetes.md, "Admission: spec.bmc and the tasks"), on
// spec.template.tasks, and no waitForBoot task.
//
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.waitForBoot))",message="waitForBoot tasks are not supported in a rollout template: a Machine carries no system UUID",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.bootDevice) || !has(t.bootDevice.uri) || (!t.bootDevice.uri.contains('@') && !t.bootDevice.uri.contains(' ') && t.bootDevice.uri.matches('(?i)^https?://[^#]*$') && isURL(t.bootDevice.uri) && url(t.bootDevice.uri).getHostname() != ''))",message="a bootDevice task's uri must be an http:// or https:// URL with a host, without spaces, credentials or a fragment (#)",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.firmwareUpdate) || (!t.firmwareUpdate.imageURI.contains('@') && t.firmwareUpdate.imageURI.matches('(?i)^https?://[^#]*$') && isURL(t.firmwareUpdate.imageURI) && url(t.firmwareUpdate.imageURI).getHostname() != ''))",message="a firmwareUpdate task's imageURI must be an http:// or https:// URL with a host, without user info or a fragment (#) (a pre-signed query is accepted)",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.firmwareUpdate) || (t.firmwareUpdate.component != '' && !t.firmwareUpdate.component.matches('[/?#]') && t.firmwareUpdate.version != ''))",message="a firmwareUpdate task needs a component (a firmware inventory ID, not a path) and a version",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.bios) || !has(t.bios.verifyOnly) || !t.bios.verifyOnly || (has(t.bios.attributes) && size(t.bios.attributes) > 0))",message="a bios task with verifyOnly needs attributes to verify",fieldPath=".tasks"
// +kubebuilder:validation:XValidation:rule="self.tasks.all(t, !has(t.timeout) || duration(t.timeout) <= duration('168h'))",message="a task's timeout must be at most 7 days (168h)",fieldPath=".tasks"

// RolloutTemplate is a job.Spec without the server's own fields (bmc,
// systemUUID): what every server's BMCJob runs.
type RolloutTemplate struct {
	// CredentialsRef names a Secret of the rollout's namespace, for the
	// Machines that name none.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CredentialsRef string `json:"credentialsRef,omitempty"`
	// Tasks run in order; a server's job stops at its first failed task.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Tasks []task.Spec `json:"tasks"`
	// Timeout bounds each server's job (zero: no job-level limit).
	// +optional
	Timeout task.Duration `json:"timeout,omitzero"`
	// SkipPreflight turns off each job's preflight (docs/preflight.md).
	// +optional
	SkipPreflight bool `json:"skipPreflight,omitempty"`
}

// RolloutPolicy is rollout.Policy in the API: limits are a count (50) or a
// percentage ("5%").
type RolloutPolicy struct {
	// MaxUnavailable bounds the servers counted unavailable at once (from
	// the status write that starts a server until the one that records its
	// job's completion): a count, or a percentage of the servers (rounded
	// down, at least 1). Default 1.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}|(100|[1-9]?[0-9])%)$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="must be a count of 0 or more, or a percentage from 0% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxUnavailablePerGroup adds a bound per Machine label: at most Max
	// servers unavailable at once among the Machines with the same value
	// of Label (Machines without the label form one group).
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	MaxUnavailablePerGroup []RolloutGroupLimit `json:"maxUnavailablePerGroup,omitempty"`
	// Canary is how many servers must run their job and succeed before any
	// other starts; a canary server that fails halts the rollout.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Canary int `json:"canary,omitempty"`
	// CanaryApproval: after the canary succeeded, wait for
	// spec.canaryApproved.
	// +optional
	CanaryApproval bool `json:"canaryApproval,omitempty"`
	// FailureBudget is how many failed servers the rollout tolerates: a
	// count, or a percentage of the servers rounded down. One more failure
	// halts it. Default 0: the first failure halts it.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}|(100|[1-9]?[0-9])%)$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="must be a count of 0 or more, or a percentage from 0% to 100%"
	// +optional
	FailureBudget *intstr.IntOrString `json:"failureBudget,omitempty"`
	// NoSkipCheck turns off the check that skips a server already in the
	// wanted state before it starts (every task's effect read back).
	// +optional
	NoSkipCheck bool `json:"noSkipCheck,omitempty"`
}

// RolloutGroupLimit is a MaxUnavailable per value of a Machine label.
type RolloutGroupLimit struct {
	// Label is a Machine label's key, e.g. topology.bmckit.io/rack.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Label string `json:"label"`
	// Max is a count (at least 1) or a percentage of the group (at least
	// 1%; the bound is at least 1 server).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^([1-9][0-9]{0,8}|(100|[1-9][0-9]?)%)$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 1",message="must be a count of 1 or more, or a percentage from 1% to 100%"
	Max intstr.IntOrString `json:"max"`
}

// BMCRolloutStatus is rollout.Status (docs/rollouts.md, "Status and
// conditions") plus the servers snapshotted at the first reconcile.
type BMCRolloutStatus struct {
	// ObservedGeneration is the generation the last write saw.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Completed (True once the rollout ended, whatever its
	// result), Running, Paused.
	//
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []conditions.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// Result is empty until Completed=True: Succeeded (every server
	// succeeded or was skipped), Failed (some failed within the budget),
	// Halted (the failure budget was spent or a canary server failed) or
	// Aborted. A rollout whose spec or servers are invalid completes
	// Failed with reason InvalidSpec.
	// +kubebuilder:validation:Enum=Succeeded;Failed;Halted;Aborted
	// +optional
	Result string `json:"result,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// States holds one byte per server, in status.servers' order: '.'
	// pending, 'h' held, 'r' running, 's' succeeded, 'f' failed, 'k'
	// skipped.
	// +kubebuilder:validation:MaxLength=5000
	// +optional
	States string `json:"states,omitempty"`
	// Counts are the servers in each state.
	// +optional
	Counts RolloutCounts `json:"counts,omitzero"`
	// Canary is the canary's progress (with policy.canary).
	// +optional
	Canary *RolloutCanary `json:"canary,omitempty"`
	// FailureBudget is how many failures the rollout tolerates;
	// FailureBudgetLeft how many more it still does (negative: spent).
	// +optional
	FailureBudget int `json:"failureBudget,omitempty"`
	// +optional
	FailureBudgetLeft int `json:"failureBudgetLeft,omitempty"`
	// Halt is set once no server may start any more: FailureBudgetSpent,
	// CanaryFailed or Aborted.
	// +optional
	Halt string `json:"halt,omitempty"`
	// Failures are the failed servers (the first 100).
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	Failures []RolloutFailure `json:"failures,omitempty"`
	// Running lists the servers counted unavailable, with when they
	// started.
	// +listType=atomic
	// +optional
	Running []RolloutRunning `json:"running,omitempty"`
	// JobMilliseconds is the summed run time of the jobs that finished
	// (from the write that started their server to their completion),
	// JobsTimed how many: the mean behind Estimate.
	// +optional
	JobMilliseconds int64 `json:"jobMilliseconds,omitempty"`
	// +optional
	JobsTimed int `json:"jobsTimed,omitempty"`
	// Estimate is the estimated time left, once a job finished.
	// +optional
	Estimate string `json:"estimate,omitempty"`
	// StartTime is the rollout's first reconcile, CompletionTime its
	// completion.
	// +optional
	StartTime *timestamp.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *timestamp.Time `json:"completionTime,omitempty"`
	// Servers are the Machines the selector matched at the first
	// reconcile, sorted by name; the rollout's server list never changes
	// afterwards. Server i's BMCJob is <rollout>.<i>.<machine>.
	// +kubebuilder:validation:MaxItems=5000
	// +listType=atomic
	// +optional
	Servers []RolloutServer `json:"servers,omitempty"`
}

// RolloutCounts are the servers in each state.
type RolloutCounts struct {
	// +optional
	Pending int `json:"pending"`
	// +optional
	Held int `json:"held"`
	// +optional
	Running int `json:"running"`
	// +optional
	Succeeded int `json:"succeeded"`
	// +optional
	Failed int `json:"failed"`
	// +optional
	Skipped int `json:"skipped"`
}

// RolloutCanary is the canary's progress: Size servers must succeed.
type RolloutCanary struct {
	// +optional
	Size int `json:"size,omitempty"`
	// +optional
	Succeeded int `json:"succeeded,omitempty"`
	// +optional
	Failed int `json:"failed,omitempty"`
	// Result is empty while the canary runs, then Succeeded or Failed.
	// +kubebuilder:validation:Enum=Succeeded;Failed
	// +optional
	Result string `json:"result,omitempty"`
	// Servers are the canary servers' indices in status.servers.
	// +listType=atomic
	// +optional
	Servers []int `json:"servers,omitempty"`
}

// RolloutFailure is one failed server.
type RolloutFailure struct {
	Server string `json:"server"`
	// Job is the server's BMCJob.
	Job string `json:"job"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// RolloutRunning is a server counted unavailable.
type RolloutRunning struct {
	// Index is the server's index in status.servers.
	Index int            `json:"index"`
	Since timestamp.Time `json:"since"`
}

// RolloutServer is one Machine of a rollout, as it was at the snapshot.
type RolloutServer struct {
	// Name is the Machine's name.
	Name string `json:"name"`
	// BMC is the Machine's spec.bmc.
	BMC string `json:"bmc"`
	// CredentialsRef is the Machine's spec.credentialsRef (empty: the
	// template's).
	// +optional
	CredentialsRef string `json:"credentialsRef,omitempty"`
	// Labels are the Machine's labels that the policy's per-group limits
	// name (the others are not kept).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// BMCRollout runs one job template on every Machine its selector matches,
// never more than policy.maxUnavailable at once (and per-group limits),
// with a canary, a failure budget, an approval gate (the Machine annotation
// bmckit.io/hold: "true"), a skip of servers already in the wanted state,
// and pause, resume and abort (docs/rollouts.md, docs/kubernetes.md
// "Rollouts"). Its name is part of its BMCJobs' names
// (<rollout>.<index>.<machine>), so it may not contain a '.'.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bmcro,categories=bmckit
// +kubebuilder:validation:XValidation:rule="!self.metadata.name.contains('.') && size(self.metadata.name) <= 63",message="a BMCRollout's name may not contain '.' and is at most 63 characters (it is part of its BMCJobs' names)"
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.result`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.counts.running`
// +kubebuilder:printcolumn:name="Succeeded",type=integer,JSONPath=`.status.counts.succeeded`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.counts.failed`
// +kubebuilder:printcolumn:name="Skipped",type=integer,JSONPath=`.status.counts.skipped`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.counts.pending`
// +kubebuilder:printcolumn:name="Held",type=integer,JSONPath=`.status.counts.held`
// +kubebuilder:printcolumn:name="Estimate",type=string,JSONPath=`.status.estimate`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Running")].message`,priority=1
type BMCRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BMCRolloutSpec   `json:"spec"`
	Status BMCRolloutStatus `json:"status,omitempty"`
}

// BMCRolloutList is a list of BMCRollouts.
//
// +kubebuilder:object:root=true
type BMCRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BMCRollout `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BMCRollout{}, &BMCRolloutList{})
}
