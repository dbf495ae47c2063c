// +kubebuilder:object:generate=true

// Package conditions holds the Condition type used by jobs, tasks and boot
// records, and helpers that keep the condition model's invariants.
//
// # Model
//
// A job (or task, or boot record) has one terminal condition, [TypeCompleted]:
// False (or Unknown) while pending or running, True once a terminal state was
// reached whatever the outcome. Consumers wait for Completed=True and then
// read the owner's Result field ([ResultSucceeded], [ResultFailed],
// [ResultCanceled], [ResultTimedOut]) with its reason and message. The result
// is deliberately not a second condition that would have to mirror Completed.
//
// [TypeRunning] is an optional progress condition. [MarkRunning],
// [MarkCompleted] and [MarkPending] set both conditions together so a
// finished object never shows a stale Running=True.
//
// [Condition] mirrors Kubernetes' metav1.Condition field for field and JSON
// name for JSON name; [Set] follows apimachinery's SetStatusCondition: it
// reports whether anything changed and moves LastTransitionTime only when the
// status flips.
//
// # Kubernetes
//
// Condition and its enums carry kubebuilder markers, and
// zz_generated.deepcopy.go (controller-gen's object generator) gives
// every type DeepCopy and DeepCopyInto, so a CRD can embed them; see
// docs/kubernetes.md.
package conditions
