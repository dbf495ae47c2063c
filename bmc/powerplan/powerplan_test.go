package powerplan

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func TestPlan(t *testing.T) {
	cases := []struct {
		state  bmc.PowerState
		action bmc.PowerAction
		want   Step
	}{
		{bmc.PowerOn, bmc.PowerActionOn, StepNone},
		{bmc.PowerPoweringOn, bmc.PowerActionOn, StepNone},
		{bmc.PowerOff, bmc.PowerActionOn, StepOn},
		{bmc.PowerUnknown, bmc.PowerActionOn, StepOn},
		{bmc.PowerOff, bmc.PowerActionOff, StepNone},
		{bmc.PowerPoweringOff, bmc.PowerActionOff, StepNone},
		{bmc.PowerOn, bmc.PowerActionOff, StepOff},
		{bmc.PowerOff, bmc.PowerActionSoftOff, StepNone},
		{bmc.PowerOn, bmc.PowerActionSoftOff, StepSoftOff},
		{bmc.PowerOn, bmc.PowerActionCycle, StepCycle},
		{bmc.PowerOff, bmc.PowerActionCycle, StepOn},
		{bmc.PowerUnknown, bmc.PowerActionCycle, StepCycle},
		{bmc.PowerOn, bmc.PowerActionReset, StepReset},
		{bmc.PowerOff, bmc.PowerActionReset, StepOn},
	}
	for _, c := range cases {
		got, err := Plan(c.state, c.action)
		if err != nil {
			t.Fatalf("Plan(%s, %s): %v", c.state, c.action, err)
		}
		if got != c.want {
			t.Errorf("Plan(%s, %s) = %q, want %q", c.state, c.action, got, c.want)
		}
	}
}

func TestPlanRejectsUnknownAction(t *testing.T) {
	_, err := Plan(bmc.PowerOn, bmc.PowerAction("explode"))
	if err == nil {
		t.Fatal("Plan accepted an undefined action")
	}
	if want := `"explode"`; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the value %s", err, want)
	}
}
