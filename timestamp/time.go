package timestamp

import "time"

// Time is a time.Time that Kubernetes' controller-gen can deep-copy and
// describe in a CRD schema (a date-time string). It encodes exactly as
// time.Time. See the package documentation for why it exists.
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

// MarshalJSON encodes the time as time.Time does (RFC 3339 with
// nanoseconds).
func (t Time) MarshalJSON() ([]byte, error) { return t.Time.MarshalJSON() }

// UnmarshalJSON decodes an RFC 3339 string as time.Time does; null leaves
// t unchanged.
func (t *Time) UnmarshalJSON(b []byte) error { return t.Time.UnmarshalJSON(b) }
