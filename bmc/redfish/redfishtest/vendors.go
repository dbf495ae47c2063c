package redfishtest

import "fmt"

// Vendor names a shape of Redfish tree captured from real hardware.
type Vendor string

// Vendors modelled by [VendorConfig].
const (
	// VendorILO5Apollo: HPE Apollo with iLO 5. The system's Boot has no
	// BootSourceOverrideMode and no HttpBootUri, although the schema is
	// ComputerSystem v1_10_0; UefiHttp is not an allowed target.
	VendorILO5Apollo Vendor = "ilo5-apollo"
	// VendorCrayEX: an HPE Cray EX node. Boot has no override properties
	// at all; the system names no manager (no Links.ManagedBy), and the
	// Managers collection lists an auxiliary controller first, which
	// cannot reset; Managers/BMC manages the node and offers only
	// ForceRestart.
	VendorCrayEX Vendor = "cray-ex"
	// VendorAMIMegaRAC: Gigabyte with AMI MegaRAC. The manager's reset
	// types are listed only behind Manager.Reset's @Redfish.ActionInfo,
	// and there only ForceRestart; the system's reset types are behind an
	// ActionInfo too; empty virtual media reads "Image": "None".
	VendorAMIMegaRAC Vendor = "ami-megarac"
	// VendorChassisController: a chassis or enclosure controller that
	// manages no computer system (an empty Systems collection).
	VendorChassisController Vendor = "chassis-controller"
)

// Vendors lists the vendors [VendorConfig] models that manage systems
// (all but VendorChassisController), in a stable order.
func Vendors() []Vendor {
	return []Vendor{VendorILO5Apollo, VendorCrayEX, VendorAMIMegaRAC}
}

// VendorConfig returns a Config with the shape of v's Redfish tree. Any
// other field (timing, faults, credentials) may be set on the result. It
// panics on a vendor it does not know.
func VendorConfig(v Vendor) Config {
	switch v {
	case VendorILO5Apollo:
		return Config{
			SchemaVersion:          "v1_10_0",
			BootOverrideProperties: []string{"BootSourceOverrideTarget", "BootSourceOverrideEnabled"},
			NoHTTPBootURI:          true,
			BootTargets:            []string{"None", "Pxe", "Hdd", "Cd", "BiosSetup"},
		}
	case VendorCrayEX:
		return Config{
			BootOverrideProperties: []string{},
			NoHTTPBootURI:          true,
			NoManagedBy:            true,
			AuxiliaryManager:       true,
			ManagerResetTypes:      []string{"ForceRestart"},
		}
	case VendorAMIMegaRAC:
		return Config{
			ResetTypesInActionInfo:        true,
			ManagerResetTypes:             []string{"ForceRestart"},
			ManagerResetTypesInActionInfo: true,
			EmptyMediaImageNone:           true,
		}
	case VendorChassisController:
		return Config{NoSystems: true}
	}
	panic(fmt.Sprintf("redfishtest: unknown vendor %q", string(v)))
}
