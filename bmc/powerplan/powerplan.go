package powerplan

import (
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

// Step is the single request a driver sends to carry out a power action.
type Step string

// Steps. StepNone means the server is already where the action leads.
const (
	StepNone    Step = ""
	StepOn      Step = "on"
	StepOff     Step = "off"
	StepSoftOff Step = "soft-off"
	StepCycle   Step = "cycle"
	StepReset   Step = "reset"
)

// Plan returns the request that carries out action given the current power
// state. It fails, naming the value, when action is not a defined
// [bmc.PowerAction].
func Plan(current bmc.PowerState, action bmc.PowerAction) (Step, error) {
	if !action.Valid() {
		return StepNone, fmt.Errorf("invalid power action %q: want one of on, off, soft-off, cycle, reset", action)
	}
	on := current == bmc.PowerOn || current == bmc.PowerPoweringOn
	off := current == bmc.PowerOff || current == bmc.PowerPoweringOff
	switch action {
	case bmc.PowerActionOn:
		if on {
			return StepNone, nil
		}
		return StepOn, nil
	case bmc.PowerActionOff:
		if off {
			return StepNone, nil
		}
		return StepOff, nil
	case bmc.PowerActionSoftOff:
		if off {
			return StepNone, nil
		}
		return StepSoftOff, nil
	case bmc.PowerActionCycle:
		if off {
			return StepOn, nil
		}
		return StepCycle, nil
	default: // bmc.PowerActionReset
		if off {
			return StepOn, nil
		}
		return StepReset, nil
	}
}
