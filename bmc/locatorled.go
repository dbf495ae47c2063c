package bmc

import "context"

// LEDState is the state of a server's locator (identify) LED, the light a
// technician looks for in the rack (docs/indicator-nmi.md).
type LEDState string

// LED states.
const (
	// LEDOff: the locator is off.
	LEDOff LEDState = "Off"
	// LEDOn: the locator is on, however the BMC shows it, steady or
	// blinking (Redfish LocationIndicatorActive true or IndicatorLED Lit,
	// IPMI Chassis Identify forced on).
	LEDOn LEDState = "On"
	// LEDBlinking: the locator blinks (Redfish IndicatorLED Blinking). BMCs
	// that cannot show it refuse it ([CapabilityLocatorLEDBlink]).
	LEDBlinking LEDState = "Blinking"
)

// Valid reports whether s is one of the LED states.
func (s LEDState) Valid() bool { return s == LEDOff || s == LEDOn || s == LEDBlinking }

// Satisfies reports whether a locator read as s shows want: Off only Off;
// On also Blinking (a blinking locator is on); Blinking only Blinking.
func (s LEDState) Satisfies(want LEDState) bool {
	if want == LEDOn {
		return s == LEDOn || s == LEDBlinking
	}
	return s == want && s.Valid()
}

// LocatorLED is implemented by drivers that can light the server's locator
// LED (Redfish LocationIndicatorActive or IndicatorLED on the system or its
// chassis; IPMI Chassis Identify). Both methods are safe for concurrent use.
type LocatorLED interface {
	// LocatorLED reads the locator's state. It changes nothing. A BMC that
	// has no locator ([CapabilityLocatorLED]) or does not report its state
	// ([CapabilityLocatorLEDReadBack]: most IPMI BMCs) fails with an error
	// wrapping [ErrNotSupported]; one that cannot read it now (Redfish
	// IndicatorLED "Unknown"), with a transient error.
	LocatorLED(ctx context.Context) (LEDState, error)
	// SetLocatorLED sets the locator to s and returns once the BMC
	// accepted it, without reading it back. It is idempotent. A state the
	// BMC cannot show (LEDBlinking without [CapabilityLocatorLEDBlink]) or
	// a BMC without a locator fails with an error wrapping
	// [ErrNotSupported], before any request that changes state; an
	// invalid s with a permanent error.
	SetLocatorLED(ctx context.Context, s LEDState) error
}
