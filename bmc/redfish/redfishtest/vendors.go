package redfishtest

import "fmt"

// Vendor names a shape of Redfish tree captured from real hardware.
type Vendor string

// Vendors modelled by [VendorConfig].
const (
	// VendorILO5Apollo: HPE Apollo with iLO 5. The system's Boot has no
	// BootSourceOverrideMode and no HttpBootUri, although the schema is
	// ComputerSystem v1_10_0; UefiHttp is not an allowed target.
	// SimpleUpdate answers 200 with no task, and the update shows only in
	// UpdateService.Oem.Hpe.State and, at its end, in the version
	// (FirmwareConfig.UntrackedUpdates, OemHpe); the TaskService lists
	// none of them. Event logs are iLO's IML and IEL (LogsILO5). The
	// locator is the system's IndicatorLED, Lit or Off (LocatorIndicator).
	VendorILO5Apollo Vendor = "ilo5-apollo"
	// VendorCrayEX: an HPE Cray EX node. Boot has no override properties
	// at all; the system names no manager (no Links.ManagedBy), and the
	// Managers collection lists an auxiliary controller first, which
	// cannot reset; Managers/BMC manages the node and offers only
	// ForceRestart. The hardware is an EX235a node's: its GPUs (8 AMD
	// Instinct) are members of the system's Processors with ProcessorType
	// GPU, the CPUs' Model is space-padded ("AMD EPYC 7763 64-Core
	// Processor" and 16 spaces), and the first NIC reports
	// MACAddress "Not Available" (seen on 12 of 14 EX systems). Every
	// BIOS attribute value is an object ({"AllowableValues": [...],
	// "current_value": ...}), some are arrays, and the Bios names no
	// attribute registry (Config.BIOSObjectValues). Its SEL's entries
	// have no Created time (LogsCrayEX).
	VendorCrayEX Vendor = "cray-ex"
	// VendorAMIMegaRAC: Gigabyte with AMI MegaRAC. The manager's reset
	// types are listed only behind Manager.Reset's @Redfish.ActionInfo,
	// and there only ForceRestart; the system's reset types are behind an
	// ActionInfo too; empty virtual media reads "Image": "None".
	VendorAMIMegaRAC Vendor = "ami-megarac"
	// VendorOpenBMC: OpenBMC (bmcweb) without a BIOS configuration
	// provider: the system links a Bios that has no Attributes and names no
	// attribute registry (BIOSNoAttributes), so it has no BIOS settings.
	// Event logs are bmcweb's EventLog and Journal (LogsOpenBMC), whose
	// entry collections page (two entries a page here, 1000 on bmcweb).
	VendorOpenBMC Vendor = "openbmc"
	// VendorIntel: an Intel server board's BMC. Firmware is listed in
	// UpdateService.SoftwareInventory (no FirmwareInventory), and there
	// is no TaskService: SimpleUpdate answers 204 with no task
	// (FirmwareConfig.SoftwareInventory, NoTaskService).
	VendorIntel Vendor = "intel"
	// VendorCrayEX4252: an HPE Cray EX4252 blade, one BMC for 4 nodes
	// (systems 1-4), each shaped like VendorCrayEX. Its one firmware
	// inventory lists the whole blade's: BMC (RelatedItem
	// Managers/BMC), FPGA0 (Chassis/1), Recovery (no RelatedItem) and
	// Node0.BIOS to Node3.BIOS, each related to its system (4 BIOS
	// entries seen from every node).
	VendorCrayEX4252 Vendor = "cray-ex4252"
	// VendorChassisController: a chassis or enclosure controller that
	// manages no computer system (an empty Systems collection).
	VendorChassisController Vendor = "chassis-controller"
)

// CrayEXCPUModel is the Model VendorCrayEX's CPUs report, padding
// included.
const CrayEXCPUModel = "AMD EPYC 7763 64-Core Processor                "

// Vendors lists the vendors [VendorConfig] models that manage systems
// (all but VendorChassisController), in a stable order.
func Vendors() []Vendor {
	return []Vendor{VendorILO5Apollo, VendorCrayEX, VendorAMIMegaRAC, VendorOpenBMC, VendorIntel, VendorCrayEX4252}
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
			Firmware:               FirmwareConfig{UntrackedUpdates: true, OemHpe: true},
			Logs:                   LogsILO5,
			Locator:                LocatorIndicator,
		}
	case VendorCrayEX:
		return Config{
			BootOverrideProperties: []string{},
			NoHTTPBootURI:          true,
			NoManagedBy:            true,
			AuxiliaryManager:       true,
			ManagerResetTypes:      []string{"ForceRestart"},
			BIOSObjectValues:       true,
			Logs:                   LogsCrayEX,
			Hardware: Hardware{
				Accelerators: 8,
				CPU:          ProcessorInfo{Manufacturer: "Advanced Micro Devices, Inc.", Model: CrayEXCPUModel, Cores: 64, Threads: 128, MaxSpeedMHz: 3530},
				MACAddresses: []string{"Not Available"},
			},
		}
	case VendorAMIMegaRAC:
		return Config{
			ResetTypesInActionInfo:        true,
			ManagerResetTypes:             []string{"ForceRestart"},
			ManagerResetTypesInActionInfo: true,
			EmptyMediaImageNone:           true,
		}
	case VendorOpenBMC:
		return Config{BIOS: BIOSNoAttributes, Logs: LogsOpenBMC, LogPageSize: 2}
	case VendorIntel:
		return Config{Firmware: FirmwareConfig{SoftwareInventory: true, NoTaskService: true}}
	case VendorCrayEX4252:
		c := VendorConfig(VendorCrayEX)
		c.Systems, c.Firmware = 4, crayEX4252Firmware()
		return c
	case VendorChassisController:
		return Config{NoSystems: true}
	}
	panic(fmt.Sprintf("redfishtest: unknown vendor %q", string(v)))
}
