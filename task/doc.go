// +kubebuilder:object:generate=true

// Package task defines one step of a job: a one-of [Spec] (power, power
// status, reachable, boot device including UEFI HTTP boot, virtual media,
// BMC reset, wait for boot) with strict decoding and validation, and the
// [Status] the runner records for it.
//
// Spec and Status are plain JSON-tagged structs with no interface fields, so
// they embed in a host's CRD types.
//
// # Kubernetes
//
// Every type carries kubebuilder markers (enums, the one-of rule on
// [Spec], the Go validation's simple rules as schema limits), and
// zz_generated.deepcopy.go (controller-gen's object generator) gives every
// type DeepCopy and DeepCopyInto. The schema catches a malformed object at
// admission; [Spec.Validate] remains the full check (URLs, UUIDs, signal
// names) and the Runner and the Stepper always run it. See
// docs/kubernetes.md.
package task
