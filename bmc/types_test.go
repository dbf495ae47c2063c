package bmc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bmckit/bmckit/bmc"
)

func TestPowerActionTargetAndValid(t *testing.T) {
	tests := []struct {
		a     bmc.PowerAction
		want  bmc.PowerState
		valid bool
	}{
		{bmc.PowerActionOn, bmc.PowerOn, true},
		{bmc.PowerActionOff, bmc.PowerOff, true},
		{bmc.PowerActionSoftOff, bmc.PowerOff, true},
		{bmc.PowerActionCycle, bmc.PowerOn, true},
		{bmc.PowerActionReset, bmc.PowerOn, true},
		{"", bmc.PowerUnknown, false},
		{"On", bmc.PowerUnknown, false},
		{"nmi", bmc.PowerUnknown, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.a.Target(), "Target(%q)", tt.a)
		assert.Equal(t, tt.valid, tt.a.Valid(), "Valid(%q)", tt.a)
	}
}

func TestPowerStateTransitional(t *testing.T) {
	for s, want := range map[bmc.PowerState]bool{
		bmc.PowerOn:          false,
		bmc.PowerOff:         false,
		bmc.PowerUnknown:     false,
		bmc.PowerPoweringOn:  true,
		bmc.PowerPoweringOff: true,
		"":                   false,
	} {
		assert.Equal(t, want, s.Transitional(), "%q", s)
	}
}
