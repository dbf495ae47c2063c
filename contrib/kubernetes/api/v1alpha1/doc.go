// +kubebuilder:object:generate=true
// +groupName=bmckit.example.com

// Package v1alpha1 is an example API group for a controller that runs BMC
// jobs with bmckit: one kind, [BMCJob], whose spec embeds job.Spec and whose
// status embeds job.Status, both inline.
//
// It is what `kubebuilder create api` would lay out, and
// scripts/crdcheck.sh runs controller-gen v0.23.0 on it (object and crd) and
// checks that the result compiles and matches what is committed
// (zz_generated.deepcopy.go here, config/crd/ for the CRD). See
// docs/kubernetes.md.
//
// # Waiting for a job
//
// job.Status is inline in BMCJobStatus, so its conditions are at
// .status.conditions, a list keyed by type, and
//
//	kubectl wait bmcjob/netboot --for=condition=Completed --timeout=30m
//
// returns once the job reached a terminal state. The outcome is in
// .status.result (Succeeded, Failed or Canceled) with .status.reason and
// .status.message, not in a second condition.
package v1alpha1
