// +kubebuilder:object:generate=true
// +groupName=bmckit.io

// Package v1alpha1 is the Kubernetes kit's API group bmckit.io, version
// v1alpha1, for a controller that runs BMC jobs with bmckit: [BMCJob], whose
// spec embeds job.Spec and whose status embeds job.Status, both inline, and
// [Machine], a BMC the monitor reads, and [BMCRollout], one job template
// run on the Machines of a label selector (package rollout of the kit
// carries it out). BMCJob's CEL rules refuse at admission
// what the runtime would refuse (docs/kubernetes.md, "Admission: spec.bmc
// and the tasks").
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
