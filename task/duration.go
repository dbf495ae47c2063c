package task

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that encodes to JSON as a Go duration string
// ("90s", "5m"), like Kubernetes' metav1.Duration. Decoding also accepts a
// number of seconds.
//
// In a CRD schema it is a string checked against [DurationPattern]: Go
// duration syntax without a sign (every bmckit duration is a non-negative
// timeout or wait). The number-of-seconds form is for JSON files, not for
// Kubernetes objects.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Pattern=`^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
type Duration struct {
	time.Duration
}

// DurationPattern is the regular expression a [Duration] matches in a CRD
// schema (the kubebuilder Pattern marker on Duration spells it out again; a
// test keeps the two equal): what time.ParseDuration accepts, without a
// sign. It bounds the syntax, not the value: a huge duration that
// overflows matches, and Validate refuses it.
const DurationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// MarshalText encodes the duration as a string (as text, so encoding/json
// writes it without re-validating a JSON fragment).
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// UnmarshalJSON accepts "1m30s" or a number of seconds; null is a no-op.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // encoding/json convention: null leaves the value unchanged
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q: want e.g. \"90s\" or \"5m\"", s)
		}
		d.Duration = v
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("invalid duration %s: want a string such as \"90s\" or a number of seconds", string(b))
	}
	if secs > float64(1<<62)/float64(time.Second) || secs < -float64(1<<62)/float64(time.Second) {
		return fmt.Errorf("invalid duration %s: out of range", string(b))
	}
	d.Duration = time.Duration(secs * float64(time.Second))
	return nil
}
