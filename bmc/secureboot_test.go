package bmc_test

import (
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func pointer[T any](v T) *T { return &v }

// TestPendingSecureBoot pins the one rule every driver uses for Pending:
// a settings object's differing value first, else the setting when the
// current boot ran otherwise.
func TestPendingSecureBoot(t *testing.T) {
	on, off := true, false
	cases := []struct {
		name     string
		enabled  bool
		settings *bool
		current  bmc.SecureBootCurrentBoot
		want     *bool
	}{
		{"settled on", true, nil, bmc.SecureBootCurrentEnabled, nil},
		{"settled off", false, nil, bmc.SecureBootCurrentDisabled, nil},
		{"current boot unknown", true, nil, bmc.SecureBootCurrentUnknown, nil},
		{"DMTF: enabled, booted without", true, nil, bmc.SecureBootCurrentDisabled, &on},
		{"DMTF: disabled, booted with", false, nil, bmc.SecureBootCurrentEnabled, &off},
		{"settings object holds on", false, &on, bmc.SecureBootCurrentDisabled, &on},
		{"settings object holds the same", false, &off, bmc.SecureBootCurrentDisabled, nil},
		{"settings object wins over current boot", true, &off, bmc.SecureBootCurrentEnabled, &off},
	}
	for _, c := range cases {
		got := bmc.PendingSecureBoot(c.enabled, c.settings, c.current)
		if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: PendingSecureBoot(%t, %v, %q) = %v, want %v", c.name, c.enabled, c.settings, c.current, got, c.want)
		}
	}
}

func TestSecureBootStateNextBootApplied(t *testing.T) {
	s := bmc.SecureBootState{Enabled: true, Pending: pointer(true), CurrentBoot: bmc.SecureBootCurrentDisabled}
	if !s.NextBoot() || s.Applied(true) {
		t.Errorf("%v: NextBoot %t Applied(true) %t; want true, false (the boot has not happened)", s, s.NextBoot(), s.Applied(true))
	}
	s = bmc.SecureBootState{Enabled: false, Pending: pointer(true)}
	if !s.NextBoot() {
		t.Errorf("%v: NextBoot false; want the pending true", s)
	}
	s = bmc.SecureBootState{Enabled: true, CurrentBoot: bmc.SecureBootCurrentEnabled, Mode: bmc.SecureBootUserMode}
	if !s.Applied(true) || s.Applied(false) {
		t.Errorf("%v: Applied(true) %t Applied(false) %t", s, s.Applied(true), s.Applied(false))
	}
	if got, want := (bmc.SecureBootState{Enabled: true, Pending: pointer(false), CurrentBoot: bmc.SecureBootCurrentEnabled, Mode: bmc.SecureBootSetupMode}).String(),
		"enabled, pending off, current boot Enabled, mode SetupMode"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestParseSecureBootWords(t *testing.T) {
	for in, want := range map[string]bmc.SecureBootMode{"UserMode": bmc.SecureBootUserMode, " setupmode ": bmc.SecureBootSetupMode,
		"DEPLOYEDMODE": bmc.SecureBootDeployedMode, "AuditMode": bmc.SecureBootAuditMode, "Custom": bmc.SecureBootModeUnknown, "": bmc.SecureBootModeUnknown} {
		if got := bmc.ParseSecureBootMode(in); got != want {
			t.Errorf("ParseSecureBootMode(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]bmc.SecureBootCurrentBoot{"Enabled": bmc.SecureBootCurrentEnabled, "disabled": bmc.SecureBootCurrentDisabled, "On": bmc.SecureBootCurrentUnknown} {
		if got := bmc.ParseSecureBootCurrentBoot(in); got != want {
			t.Errorf("ParseSecureBootCurrentBoot(%q) = %q, want %q", in, got, want)
		}
	}
	if bmc.SecureBootResetKeys("ResetEverything").Valid() || !bmc.SecureBootDeletePK.Valid() {
		t.Error("SecureBootResetKeys.Valid: wrong")
	}
}
