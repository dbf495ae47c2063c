package task

import "github.com/bmckit/bmckit/bmc"

// LEDState is the state a locatorLED task sets.
//
// +kubebuilder:validation:Enum=on;off;blinking
type LEDState string

// Locator LED states.
const (
	// LEDOn: on, however the BMC shows it (steady or blinking).
	LEDOn LEDState = "on"
	// LEDOff: off.
	LEDOff LEDState = "off"
	// LEDBlinking: blinking; BMCs that cannot show it (Redfish services
	// with only LocationIndicatorActive, IPMI) fail the job's preflight
	// with reason NotSupported.
	LEDBlinking LEDState = "blinking"
)

// LocatorLEDAction sets the server's locator (identify) LED
// (bmc.LocatorLED: Redfish LocationIndicatorActive or IndicatorLED on the
// system or its chassis, IPMI Chassis Identify) and reads it back: the
// task succeeds when the LED shows the state (a blinking LED shows "on").
// Where the BMC cannot report the LED (most IPMI BMCs), it succeeds when
// the BMC accepted the request, and its message says that it was not read
// back. docs/indicator-nmi.md.
type LocatorLEDAction struct {
	// State is "on", "off" or "blinking"; required.
	State LEDState `json:"state"`
}

// BMCState is State as a bmc.LEDState ("" for an invalid State).
func (a *LocatorLEDAction) BMCState() bmc.LEDState {
	switch a.State {
	case LEDOn:
		return bmc.LEDOn
	case LEDOff:
		return bmc.LEDOff
	case LEDBlinking:
		return bmc.LEDBlinking
	}
	return ""
}

func (a *LocatorLEDAction) describe() string { return "locator LED " + string(a.State) }

func (a *LocatorLEDAction) validate(path string) error {
	if a.BMCState() == "" {
		return fieldErr(path, "state", "%q is not one of on, off, blinking", truncate(string(a.State), 80))
	}
	return nil
}
