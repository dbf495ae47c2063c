package timestamp

import "time"

// Time is a time.Time that Kubernetes' controller-gen can deep-copy and
// describe in a CRD schema (a date-time string). It encodes exactly as
// time.Time: its MarshalJSON, UnmarshalJSON, MarshalText and UnmarshalText
// are time.Time's, promoted by embedding. (They are deliberately not
// redeclared: goccy/go-json, the Runner's record codec, writes a type that
// has time.Time's MarshalJSON by embedding straight into its buffer, and
// calls and re-checks a declared one, which made job records 2x slower to
// encode.) See the package documentation for why Time exists.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Format=date-time
type Time struct {
	time.Time
}

// New wraps t.
func New(t time.Time) Time { return Time{Time: t} }

// Ptr wraps t and returns a pointer, for the optional (pointer) time fields.
func Ptr(t time.Time) *Time { return &Time{Time: t} }

// DeepCopyInto copies t into out. A time.Time is a value (its Location is
// shared and never mutated), so a plain copy is a deep copy; metav1.Time
// does the same. Hand-written: controller-gen cannot generate it for the
// embedded time.Time.
func (t *Time) DeepCopyInto(out *Time) { *out = *t }
