package task

import (
	"fmt"
	"slices"

	"github.com/bmckit/bmckit/bmc"
)

// SecureBootAction sets UEFI Secure Boot on or off, or resets its key
// databases (bmc.SecureBootManager: Redfish's SecureBoot resource);
// docs/secure-boot-boot-order.md. Exactly one of Enabled and ResetKeys.
//
// Enabled is verified by read-back: the task succeeds when the BMC shows
// the setting, or holds it for the next boot (Status.SecureBoot.RebootRequired:
// the job's next tasks reboot the server; a later secureBoot task with
// VerifyOnly checks that the boot applied it). ResetKeys is an action with
// no state to read back: the task succeeds when the BMC accepted it, and a
// task interrupted between storing its intent and the BMC's answer sends it
// again (resetting keys twice leaves them as once).
//
// +kubebuilder:validation:XValidation:rule="has(self.enabled) != has(self.resetKeys)",message="set exactly one of enabled and resetKeys"
type SecureBootAction struct {
	// Enabled turns Secure Boot on (true) or off (false).
	Enabled *bool `json:"enabled,omitempty"`
	// ResetKeys resets the key databases: ResetAllKeysToDefault,
	// DeleteAllKeys, DeletePK, ResetPK, ResetKEK, ResetDB or ResetDBX (the
	// BMC must offer it: else the job's preflight fails NotSupported).
	//
	// +kubebuilder:validation:Enum=ResetAllKeysToDefault;DeleteAllKeys;DeletePK;ResetPK;ResetKEK;ResetDB;ResetDBX
	ResetKeys bmc.SecureBootResetKeys `json:"resetKeys,omitempty"`
	// VerifyOnly sends nothing: the task fails (reason
	// VerificationFailed) unless the current boot runs with Enabled.
	VerifyOnly bool `json:"verifyOnly,omitempty"`
}

func (a *SecureBootAction) describe() string {
	switch {
	case a.ResetKeys != "":
		return "reset Secure Boot keys (" + string(a.ResetKeys) + ")"
	case a.VerifyOnly:
		return fmt.Sprintf("verify Secure Boot %s", onOff(a.Enabled))
	}
	return "Secure Boot " + onOff(a.Enabled)
}

func onOff(b *bool) string {
	if b != nil && *b {
		return "on"
	}
	return "off"
}

func (a *SecureBootAction) validate(path string) error {
	switch {
	case (a.Enabled == nil) == (a.ResetKeys == ""):
		return fieldErr(path, "enabled", "set exactly one of enabled and resetKeys")
	case a.ResetKeys != "" && !a.ResetKeys.Valid():
		return fieldErr(path, "resetKeys", "%q is not one of %v", truncate(string(a.ResetKeys), 80), bmc.SecureBootResetKinds())
	case a.ResetKeys != "" && a.VerifyOnly:
		return fieldErr(path, "verifyOnly", "a key reset has nothing to verify: remove verifyOnly")
	}
	return nil
}

// SecureBootStatus is what a secureBoot task read last.
type SecureBootStatus struct {
	// State is the Secure Boot state as last read.
	State bmc.SecureBootState `json:"state"`
	// RebootRequired says the requested setting waits for the next boot.
	RebootRequired bool `json:"rebootRequired,omitempty"`
}

// BootOrderAction sets the persistent boot order, enables or disables
// boot options and sets the UEFI HTTP boot URI (bmc.BootOrderManager:
// Redfish Boot.BootOrder, BootOptions and Boot.HttpBootUri);
// docs/secure-boot-boot-order.md. Verified by read-back like
// SecureBootAction.Enabled: done when the BMC shows it or holds it for the
// next boot (Status.BootOrder.RebootRequired).
type BootOrderAction struct {
	// Order are boot option references (Redfish BootOptionReference, e.g.
	// "Boot0003") to boot first, in this order; the others keep their
	// order after them.
	//
	// +kubebuilder:validation:MaxItems=64
	Order []string `json:"order,omitempty"`
	// Enabled enables (true) or disables (false) boot options, by
	// reference: PXE on one interface, for instance.
	//
	// +kubebuilder:validation:MaxProperties=64
	Enabled map[string]bool `json:"enabled,omitempty"`
	// HTTPBootURI is the UEFI HTTP boot URI (an absolute http or https URL
	// without user info: it is stored with the job).
	//
	// +kubebuilder:validation:MaxLength=2048
	HTTPBootURI string `json:"httpBootURI,omitempty"`
	// VerifyOnly sends nothing: the task fails (reason
	// VerificationFailed) unless the BMC shows all of the above applied.
	VerifyOnly bool `json:"verifyOnly,omitempty"`
}

// Change is a as a bmc.BootOrderChange.
func (a *BootOrderAction) Change() bmc.BootOrderChange {
	c := bmc.BootOrderChange{Order: a.Order, Enabled: a.Enabled}
	if a.HTTPBootURI != "" {
		u := a.HTTPBootURI
		c.HTTPBootURI = &u
	}
	return c
}

func (a *BootOrderAction) describe() string {
	if a.VerifyOnly {
		return "verify the boot order"
	}
	return "set the boot order"
}

func (a *BootOrderAction) validate(path string) error {
	c := a.Change()
	if c.IsZero() {
		return fieldErr(path, "order", "set order, enabled or httpBootURI")
	}
	for i, ref := range a.Order {
		if ref == "" || slices.Contains(a.Order[:i], ref) {
			return fieldErr(path, fmt.Sprintf("order[%d]", i), "%q is empty or given twice", truncate(ref, 80))
		}
	}
	// The rest (known references, the URI's shape) is checked against the
	// BMC's own options before anything is sent (bmc.ValidateBootOrderChange).
	if err := bmc.ValidateBootOrderChange(bmc.BootOrder{Order: a.Order, Options: optionsOf(a), HTTPBootURI: new(string)}, c); err != nil {
		return fieldErr(path, "httpBootURI", "%v", err)
	}
	return nil
}

// optionsOf lists the references a names, as options, so that
// ValidateBootOrderChange checks only what needs no BMC (the URI).
func optionsOf(a *BootOrderAction) []bmc.BootOption {
	var opts []bmc.BootOption
	for _, r := range a.Order {
		opts = append(opts, bmc.BootOption{Reference: r})
	}
	for r := range a.Enabled {
		if !slices.Contains(a.Order, r) {
			opts = append(opts, bmc.BootOption{Reference: r})
		}
	}
	return opts
}

// BootOrderStatus is what a bootOrder task read last.
type BootOrderStatus struct {
	// Order is the boot order as last read (at most 64 references), and
	// PendingOrder the one the next boot brings, when it differs.
	Order        []string `json:"order,omitempty"`
	PendingOrder []string `json:"pendingOrder,omitempty"`
	// RebootRequired says the requested change waits for the next boot.
	RebootRequired bool `json:"rebootRequired,omitempty"`
}
