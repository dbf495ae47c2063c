package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

// MachineSpec names a BMC to watch: its address (as job.Spec.BMC) and a
// reference to a Secret of the object's namespace with its credentials.
type MachineSpec struct {
	// BMC is the BMC's address, e.g. redfish://10.0.0.5/redfish/v1/Systems/1
	// or ipmi://10.0.0.6. Never with credentials.
	// +kubebuilder:validation:MinLength=1
	BMC string `json:"bmc"`
	// CredentialsRef names a Secret in the Machine's namespace with the keys
	// username and password.
	// +optional
	CredentialsRef string `json:"credentialsRef,omitempty"`
}

// MachineStatus is what the bmckit monitor last read from the BMC.
type MachineStatus struct {
	// ObservedGeneration is the Generation the last read was made for.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds Contactable: True when the BMC answered the last
	// read, False with a reason (Unauthorized, Unreachable, TLSError,
	// Timeout, CredentialsUnresolved, NotSupported, BMCError) when it did
	// not, Unknown (Pending) until the first read.
	//
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []conditions.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// Power is the power state the BMC last reported (kept, as the last
	// known state, when a later read fails).
	// +optional
	Power string `json:"power,omitempty"`
	// LastReadTime is when the BMC last answered a read.
	// +optional
	LastReadTime *timestamp.Time `json:"lastReadTime,omitempty"`
	// LastAttemptTime is when the last read was made, answered or not.
	// +optional
	LastAttemptTime *timestamp.Time `json:"lastAttemptTime,omitempty"`
}

// Machine is a server whose BMC the bmckit monitor reads on an interval,
// as Rufio's Machine: is it contactable, and what power state it reports.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=bmckit
// +kubebuilder:printcolumn:name="BMC",type=string,JSONPath=`.spec.bmc`
// +kubebuilder:printcolumn:name="Contactable",type=string,JSONPath=`.status.conditions[?(@.type=="Contactable")].status`
// +kubebuilder:printcolumn:name="Power",type=string,JSONPath=`.status.power`
// +kubebuilder:printcolumn:name="Last read",type=date,JSONPath=`.status.lastReadTime`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Contactable")].reason`,priority=1
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineSpec   `json:"spec"`
	Status MachineStatus `json:"status,omitempty"`
}

// MachineList is a list of Machines.
//
// +kubebuilder:object:root=true
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Machine `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Machine{}, &MachineList{})
}
