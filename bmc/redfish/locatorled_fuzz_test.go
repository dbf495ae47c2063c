package redfish

import (
	"errors"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// FuzzParseLocator feeds ComputerSystem and Chassis bodies through the
// locator's decoder and what the driver derives from it: a read is a
// valid state or an error; a PATCH body names exactly one property the
// resource has, or the state is NotSupported.
func FuzzParseLocator(f *testing.F) {
	for _, s := range []string{
		`{"LocationIndicatorActive":true,"IndicatorLED":"Blinking"}`,
		`{"LocationIndicatorActive":false}`,
		`{"IndicatorLED":"Lit","IndicatorLED@Redfish.AllowableValues":["Lit","Off"]}`,
		`{"IndicatorLED":"Unknown"}`,
		`{"LocationIndicatorActive":null,"IndicatorLED":null}`,
		`{"LocationIndicatorActive":"true"}`,
		`{"IndicatorLED":3}`,
		`{}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		l, err := parseLocator(body)
		if err != nil {
			return
		}
		if s, err := l.state(); err == nil && !s.Valid() {
			t.Fatalf("state %q from %s", s, body)
		}
		for _, want := range []bmc.LEDState{bmc.LEDOn, bmc.LEDOff, bmc.LEDBlinking} {
			b, err := l.patchBody(want)
			if err != nil {
				if !errors.Is(err, bmc.ErrNotSupported) {
					t.Fatalf("patchBody(%s) of %s: %v, not ErrNotSupported", want, body, err)
				}
				continue
			}
			if len(b) != 1 {
				t.Fatalf("patchBody(%s) of %s = %v: want one property", want, body, b)
			}
			if _, ok := b[propActive]; ok && !l.hasActive {
				t.Fatalf("patchBody(%s) of %s writes %s, which the resource lacks", want, body, propActive)
			}
			if _, ok := b[propIndicator]; ok && !l.hasIndicator {
				t.Fatalf("patchBody(%s) of %s writes %s, which the resource lacks", want, body, propIndicator)
			}
		}
	})
}

// TestParseLocatorErrorsNameTheField: a property of the wrong type is
// named with its value.
func TestParseLocatorErrorsNameTheField(t *testing.T) {
	for body, want := range map[string]string{
		`{"LocationIndicatorActive":"yes"}`: `LocationIndicatorActive is "yes", not a boolean`,
		`{"IndicatorLED":1}`:                `IndicatorLED is 1, not a string`,
	} {
		_, err := parseLocator([]byte(body))
		if err == nil || err.Error() != want {
			t.Errorf("parseLocator(%s) = %v; want %q", body, err, want)
		}
	}
}
