package task

import (
	"sort"
	"strings"
)

// MaxBIOSAttributes bounds BIOSAction.Attributes.
const MaxBIOSAttributes = 256

// BIOSAction reads or sets the system's BIOS (UEFI setup) attributes through
// the BMC (bmc.BIOSConfigurer; Redfish: the Bios resource and its
// @Redfish.Settings object). See docs/inventory-bios.md, "The bios task".
//
//   - No Attributes: reads the current and pending attributes into the
//     task's Status.BIOS, changing nothing.
//   - Attributes: the task succeeds at once if every attribute already has
//     its value. Otherwise it checks them against the BMC's attribute
//     registry (an unknown attribute, a value outside the allowed ones, a
//     read-only attribute fails the task naming it, before any change is
//     sent) and requests them. A BMC that applies them at once is read back;
//     one that applies them at the next boot leaves them pending: the task
//     then succeeds with Status.BIOS.RebootRequired, and the job's next
//     tasks are the reboot (a power cycle) and a bios task with VerifyOnly,
//     which reads them back after it.
//   - VerifyOnly: sends nothing; succeeds when every attribute has its
//     value, and fails with reason VerificationFailed naming those that
//     differ otherwise.
type BIOSAction struct {
	// Attributes are the values to set, by attribute name (the registry's
	// AttributeName), as text: enumeration values as named, integers in
	// decimal, booleans "true" or "false". At most 256.
	//
	// +kubebuilder:validation:MaxProperties=256
	Attributes map[string]string `json:"attributes,omitempty"`
	// VerifyOnly checks Attributes without changing anything.
	VerifyOnly bool `json:"verifyOnly,omitempty"`
}

func (a *BIOSAction) describe() string {
	switch {
	case len(a.Attributes) == 0:
		return "read BIOS settings"
	case a.VerifyOnly:
		return "verify BIOS settings " + a.names()
	}
	return "set BIOS settings " + a.names()
}

// names lists the attribute names, sorted, shortened past 120 bytes.
func (a *BIOSAction) names() string {
	names := make([]string, 0, len(a.Attributes))
	for k := range a.Attributes {
		names = append(names, k)
	}
	sort.Strings(names)
	return truncate(strings.Join(names, ", "), 120)
}

func (a *BIOSAction) validate(path string) error {
	if a.VerifyOnly && len(a.Attributes) == 0 {
		return fieldErr(path, "verifyOnly", "set attributes to verify")
	}
	if len(a.Attributes) > MaxBIOSAttributes {
		return fieldErr(path, "attributes", "%d attributes, at most %d", len(a.Attributes), MaxBIOSAttributes)
	}
	for k, v := range a.Attributes {
		switch {
		case k == "" || len(k) > 128:
			return fieldErr(path, "attributes", "attribute name %q: want 1 to 128 bytes", truncate(k, 80))
		case len(v) > 1024:
			return fieldErr(path, "attributes."+k, "%d bytes, at most 1024", len(v))
		}
	}
	return nil
}
