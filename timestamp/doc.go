// +kubebuilder:object:generate=true

// Package timestamp holds [Time], the time type of bmckit's stored and
// CRD-embeddable structs (conditions.Condition, task.Status, job.Status).
//
// # Why not time.Time
//
// Kubernetes' controller-gen cannot handle a time.Time field: its deepcopy
// generator emits a DeepCopyInto call that time.Time lacks (the generated
// code does not compile), and its CRD generator walks time.Time's
// unexported fields and fails. Kubernetes solves this with metav1.Time; the
// core of bmckit must not import k8s.io, so [Time] is the same idea without
// the dependency: a struct embedding time.Time, with a hand-written
// DeepCopyInto and the markers that make its schema a date-time string.
//
// # Encoding
//
// Time encodes exactly as time.Time does (RFC 3339 with nanoseconds, the
// zero time as "0001-01-01T00:00:00Z"), so records written before Time
// existed decode unchanged and records written now decode into a
// time.Time. Unlike metav1.Time it does not round to the second and does not
// encode the zero time as null: the Runner compares stored times (retry and
// lease deadlines) to the nanosecond.
//
// Embedding promotes time.Time's methods: t.IsZero(), t.Sub(u.Time),
// t.Before(u.Time), and t.Time for the time.Time itself.
package timestamp
