package bmc

import (
	"context"
	"fmt"
	"strings"
)

// SecureBootManager is implemented by drivers that can read and change the
// system's UEFI Secure Boot (Redfish: the system's SecureBoot resource). A
// BMC without it fails every method with an error wrapping
// [ErrNotSupported] ([CapabilitySecureBoot]), having sent no request that
// changes state. Methods are safe for concurrent use. The driver never
// reboots: a change that waits for the next boot is reported as Pending,
// and the caller reboots (a job's next task). See
// docs/secure-boot-boot-order.md.
type SecureBootManager interface {
	// SecureBoot reads the state. It changes nothing.
	SecureBoot(ctx context.Context) (SecureBootState, error)

	// SetSecureBoot requests Secure Boot on or off. It is idempotent: when
	// the next boot already brings the value (SecureBootState.NextBoot),
	// it sends nothing. Otherwise it sends the change and reads it back; a
	// value the BMC neither applied nor holds pending fails the call. It
	// returns the state read back: Pending set means the change waits for
	// the next boot. Turning it on in SetupMode (no platform key) fails
	// with an error wrapping ErrSecureBootSetupMode, nothing sent.
	SetSecureBoot(ctx context.Context, enabled bool) (SecureBootState, error)

	// ResetSecureBootKeys resets the key databases as kind says, where the
	// BMC offers that reset (SecureBootState.ResetKeys); another kind fails
	// with an error wrapping [ErrNotSupported] ([CapabilitySecureBootResetKeys]),
	// nothing sent. Not idempotent in general (it is an action). It
	// returns the state read after it.
	ResetSecureBootKeys(ctx context.Context, kind SecureBootResetKeys) (SecureBootState, error)
}

// SecureBootCurrentBoot is whether Secure Boot was in force during the
// current boot, in Redfish's words (SecureBootCurrentBoot).
type SecureBootCurrentBoot string

// SecureBootCurrentBoot values.
const (
	SecureBootCurrentEnabled  SecureBootCurrentBoot = "Enabled"
	SecureBootCurrentDisabled SecureBootCurrentBoot = "Disabled"
	// SecureBootCurrentUnknown: the BMC does not report it.
	SecureBootCurrentUnknown SecureBootCurrentBoot = ""
)

// SecureBootMode is the UEFI Secure Boot mode, in Redfish's words
// (SecureBootMode).
type SecureBootMode string

// SecureBootMode values.
const (
	// SecureBootSetupMode: no platform key (PK); Secure Boot is not
	// enforced whatever the setting.
	SecureBootSetupMode    SecureBootMode = "SetupMode"
	SecureBootUserMode     SecureBootMode = "UserMode"
	SecureBootAuditMode    SecureBootMode = "AuditMode"
	SecureBootDeployedMode SecureBootMode = "DeployedMode"
	// SecureBootModeUnknown: the BMC does not report it, or reports a word
	// that is none of the above.
	SecureBootModeUnknown SecureBootMode = ""
)

// ParseSecureBootMode maps a BMC's word to a SecureBootMode, any case;
// anything else is SecureBootModeUnknown.
func ParseSecureBootMode(s string) SecureBootMode {
	for _, m := range []SecureBootMode{SecureBootSetupMode, SecureBootUserMode, SecureBootAuditMode, SecureBootDeployedMode} {
		if strings.EqualFold(strings.TrimSpace(s), string(m)) {
			return m
		}
	}
	return SecureBootModeUnknown
}

// ParseSecureBootCurrentBoot maps a BMC's word to a SecureBootCurrentBoot,
// any case; anything else is SecureBootCurrentUnknown.
func ParseSecureBootCurrentBoot(s string) SecureBootCurrentBoot {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "enabled":
		return SecureBootCurrentEnabled
	case "disabled":
		return SecureBootCurrentDisabled
	}
	return SecureBootCurrentUnknown
}

// SecureBootResetKeys is a reset of the Secure Boot key databases, as
// Redfish's SecureBoot.ResetKeys names it (ResetKeysType).
type SecureBootResetKeys string

// SecureBootResetKeys values (SecureBoot schema v1_1).
const (
	// SecureBootResetAllKeysToDefault resets every database to the
	// platform's defaults (leaves SetupMode).
	SecureBootResetAllKeysToDefault SecureBootResetKeys = "ResetAllKeysToDefault"
	// SecureBootDeleteAllKeys empties every database (enters SetupMode).
	SecureBootDeleteAllKeys SecureBootResetKeys = "DeleteAllKeys"
	// SecureBootDeletePK deletes the platform key (enters SetupMode).
	SecureBootDeletePK SecureBootResetKeys = "DeletePK"
	SecureBootResetPK  SecureBootResetKeys = "ResetPK"
	SecureBootResetKEK SecureBootResetKeys = "ResetKEK"
	SecureBootResetDB  SecureBootResetKeys = "ResetDB"
	SecureBootResetDBX SecureBootResetKeys = "ResetDBX"
)

// SecureBootResetKinds lists every SecureBootResetKeys, in a stable order.
func SecureBootResetKinds() []SecureBootResetKeys {
	return []SecureBootResetKeys{SecureBootResetAllKeysToDefault, SecureBootDeleteAllKeys, SecureBootDeletePK,
		SecureBootResetPK, SecureBootResetKEK, SecureBootResetDB, SecureBootResetDBX}
}

// Valid reports whether k is one of the defined resets.
func (k SecureBootResetKeys) Valid() bool {
	for _, v := range SecureBootResetKinds() {
		if k == v {
			return true
		}
	}
	return false
}

// ErrSecureBootSetupMode is wrapped by the error of SetSecureBoot(true) on
// a system in SetupMode: without a platform key the firmware would boot
// with Secure Boot off whatever the setting.
var ErrSecureBootSetupMode = fmt.Errorf("secure boot cannot be enforced in SetupMode (no platform key): reset the keys to their defaults (%s) first", SecureBootResetAllKeysToDefault)

// SecureBootState is what [SecureBootManager.SecureBoot] reads.
//
// +kubebuilder:object:generate=true
type SecureBootState struct {
	// Enabled is the setting the BMC holds (Redfish SecureBootEnable).
	Enabled bool `json:"enabled"`
	// Pending is the value the next boot brings, when it differs from the
	// current boot's: a requested value the BMC holds in a settings object
	// (Dell), or the setting itself when the current boot ran otherwise
	// (SecureBootCurrentBoot; the DMTF and HPE shapes). Nil when nothing
	// waits for a boot.
	Pending *bool `json:"pending,omitempty"`
	// CurrentBoot is whether Secure Boot was in force during the current
	// boot; SecureBootCurrentUnknown when the BMC does not say.
	CurrentBoot SecureBootCurrentBoot `json:"currentBoot,omitempty"`
	// Mode is the UEFI Secure Boot mode; SecureBootModeUnknown when the
	// BMC does not say.
	Mode SecureBootMode `json:"mode,omitempty"`
	// ResetKeys are the key resets the BMC offers; empty when it offers
	// none.
	ResetKeys []SecureBootResetKeys `json:"resetKeys,omitempty"`
}

// NextBoot is whether Secure Boot is on after the next boot: Pending when
// set, else Enabled.
func (s SecureBootState) NextBoot() bool {
	if s.Pending != nil {
		return *s.Pending
	}
	return s.Enabled
}

// Applied reports whether Secure Boot is set to want and the current boot
// runs with it (or the BMC does not report the current boot): the
// verification of a change after the boot that applies it.
func (s SecureBootState) Applied(want bool) bool { return s.Enabled == want && s.Pending == nil }

// OffersReset reports whether the BMC offers the key reset k.
func (s SecureBootState) OffersReset(k SecureBootResetKeys) bool {
	for _, v := range s.ResetKeys {
		if v == k {
			return true
		}
	}
	return false
}

// PendingSecureBoot computes SecureBootState.Pending the one way every
// driver must: settings is the value held in a settings object (nil when
// there is none or it holds none), enabled the resource's setting and
// current the current boot. A settings value that differs from enabled is
// pending; else enabled is pending when the current boot is known and ran
// otherwise.
func PendingSecureBoot(enabled bool, settings *bool, current SecureBootCurrentBoot) *bool {
	if settings != nil && *settings != enabled {
		v := *settings
		return &v
	}
	if current != SecureBootCurrentUnknown && (current == SecureBootCurrentEnabled) != enabled {
		v := enabled
		return &v
	}
	return nil
}

// String is one line for messages and logs, e.g. "enabled, pending off,
// current boot Disabled, mode UserMode".
func (s SecureBootState) String() string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	var b strings.Builder
	if s.Enabled {
		b.WriteString("enabled")
	} else {
		b.WriteString("disabled")
	}
	if s.Pending != nil {
		b.WriteString(", pending " + onOff(*s.Pending))
	}
	if s.CurrentBoot != SecureBootCurrentUnknown {
		b.WriteString(", current boot " + string(s.CurrentBoot))
	}
	if s.Mode != SecureBootModeUnknown {
		b.WriteString(", mode " + string(s.Mode))
	}
	return b.String()
}

// SecureBootNeed is a [Need] for Secure Boot: reading and setting it, and
// with ResetKeys set, that key reset.
type SecureBootNeed struct {
	ResetKeys SecureBootResetKeys `json:"resetKeys,omitempty"`
}

// String names the need: "secure boot", "secure boot key reset DeletePK".
func (n SecureBootNeed) String() string {
	if n.ResetKeys != "" {
		return "secure boot key reset " + string(n.ResetKeys)
	}
	return "secure boot"
}
