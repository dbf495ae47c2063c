package conditions

import (
	"time"

	"github.com/bmckit/bmckit/timestamp"
)

// Status is the status of a condition: True, False or Unknown.
//
// +kubebuilder:validation:Enum=True;False;Unknown
type Status string

// Condition statuses, spelled as in Kubernetes.
const (
	True    Status = "True"
	False   Status = "False"
	Unknown Status = "Unknown"
)

// Condition is one aspect of an object's state. It mirrors Kubernetes'
// metav1.Condition field for field (same JSON names) without importing it, so
// a host can convert with a plain field copy (LastTransitionTime.Time to
// metav1.NewTime). Its kubebuilder markers are metav1.Condition's, except
// that Reason may be empty and is not pattern-checked: a status the runner
// wrote must never be refused by the API server.
type Condition struct {
	// Type of the condition, in CamelCase, e.g. "Completed".
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status Status `json:"status"`
	// ObservedGeneration is the generation of the spec the condition was set against.
	//
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastTransitionTime is when Status last changed, truncated to the second.
	LastTransitionTime timestamp.Time `json:"lastTransitionTime"`
	// Reason is a CamelCase, machine-readable reason for the last change.
	//
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`
	// Message is a human-readable explanation.
	//
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message"`
}

// Set adds or updates the condition of c.Type in *conds and reports whether
// anything changed. LastTransitionTime moves only when Status flips (or the
// condition is new); it is taken from c.LastTransitionTime, or from time.Now
// when that is zero, and truncated to the second. Reason, Message and
// ObservedGeneration are updated in place without moving the transition time.
func Set(conds *[]Condition, c Condition) bool {
	if conds == nil {
		return false
	}
	t := c.LastTransitionTime.Time
	if t.IsZero() {
		t = time.Now()
	}
	ts := timestamp.New(TransitionTime(t))
	for i := range *conds {
		ex := &(*conds)[i]
		if ex.Type != c.Type {
			continue
		}
		changed := false
		if ex.Status != c.Status {
			ex.Status = c.Status
			ex.LastTransitionTime = ts
			changed = true
		}
		if ex.Reason != c.Reason {
			ex.Reason = c.Reason
			changed = true
		}
		if ex.Message != c.Message {
			ex.Message = c.Message
			changed = true
		}
		if ex.ObservedGeneration != c.ObservedGeneration {
			ex.ObservedGeneration = c.ObservedGeneration
			changed = true
		}
		return changed
	}
	c.LastTransitionTime = ts
	*conds = append(*conds, c)
	return true
}

// TransitionTime is t as Set stores a LastTransitionTime: in UTC, truncated
// to the second.
func TransitionTime(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// Get returns the condition of the given type, or nil.
func Get(conds []Condition, condType string) *Condition {
	for i := range conds {
		if conds[i].Type == condType {
			return &conds[i]
		}
	}
	return nil
}

// Remove deletes the condition of the given type and reports whether it was there.
func Remove(conds *[]Condition, condType string) bool {
	if conds == nil {
		return false
	}
	for i := range *conds {
		if (*conds)[i].Type == condType {
			*conds = append((*conds)[:i], (*conds)[i+1:]...)
			return true
		}
	}
	return false
}

// IsTrue reports whether the condition is present with status True.
func IsTrue(conds []Condition, condType string) bool { return is(conds, condType, True) }

// IsFalse reports whether the condition is present with status False.
func IsFalse(conds []Condition, condType string) bool { return is(conds, condType, False) }

// IsUnknown reports whether the condition is absent or has status Unknown.
func IsUnknown(conds []Condition, condType string) bool {
	c := Get(conds, condType)
	return c == nil || c.Status == Unknown
}

func is(conds []Condition, condType string, s Status) bool {
	c := Get(conds, condType)
	return c != nil && c.Status == s
}
