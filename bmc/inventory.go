package bmc

import (
	"context"
	"strings"
	"unicode/utf8"
)

// InventoryReader is implemented by drivers that can read the hardware
// inventory of their system (Redfish: processors, memory, storage,
// Ethernet interfaces, the firmware inventory; IPMI: the FRU and the BMC's
// firmware). It changes nothing and is safe for concurrent use.
//
// The result is bounded ([Inventory.Bound]); sections the BMC cannot report
// are listed in Inventory.Unsupported. A BMC that can report none at all
// fails with an error wrapping [ErrNotSupported] ([CapabilityInventory]).
type InventoryReader interface {
	Inventory(ctx context.Context) (Inventory, error)
}

// Limits of an [Inventory], applied by [Inventory.Bound]: a task's status
// that holds one stays small enough for a Kubernetes object (see
// docs/inventory-bios.md).
const (
	// MaxInventoryEntries is the most entries each list holds.
	MaxInventoryEntries = 64
	// MaxInventoryString is the longest string, in bytes.
	MaxInventoryString = 128
)

// InventorySection names a part of an [Inventory], for
// Inventory.Unsupported and Inventory.Unreadable.
type InventorySection string

// Inventory sections.
const (
	InventorySystem InventorySection = "system"
	InventoryBoard  InventorySection = "board"
	// InventoryProcessors covers Inventory.Processors and
	// Inventory.Accelerators: both come from one source (Redfish: the
	// system's Processors collection).
	InventoryProcessors InventorySection = "processors"
	InventoryMemory     InventorySection = "memory"
	InventoryStorage    InventorySection = "storage"
	InventoryNetwork    InventorySection = "network"
	InventoryFirmware   InventorySection = "firmware"
)

// Inventory is the hardware inventory of one system, as its BMC reports it:
// plain JSON-tagged data with a generated DeepCopy, for a task's status.
// Empty strings and zero numbers mean the BMC did not say; a placeholder
// the BMC sends instead of a value ("Not Available", "N/A", an all-zero
// MAC, see [IsPlaceholder]) is reported empty, and vendors' space padding
// is trimmed.
//
// # Partial, never lost
//
// One resource the BMC lists but cannot answer for (a hot-removed disk
// answering 404, a member answering 5xx, a body that is not the resource)
// does not fail the inventory: it is listed in Unreadable, with its section
// and path, and everything else is kept. What fails the whole call instead:
// the system itself unreadable (any error reading the system resource, as
// before), rejected credentials (401/403, [ErrUnauthorized]), a cancelled
// or expired ctx, the fence, a request the BMC did not answer (connection
// refused or reset, timeout) and an answer asking the client to come back
// later (408, 429): those are errors the caller can retry or must fix, and
// an inventory written with them as gaps would lose what a retry reads.
// See docs/inventory-bios.md.
//
// +kubebuilder:object:generate=true
type Inventory struct {
	System SystemInfo `json:"system,omitempty"`
	Board  BoardInfo  `json:"board,omitempty"`
	// Processors are the CPUs only: a GPU or other accelerator the BMC
	// lists among its processors is in Accelerators.
	Processors []Processor `json:"processors,omitempty"`
	// Accelerators are GPUs, FPGAs and other processors that are not CPUs
	// (Redfish: members of the system's Processors collection whose
	// ProcessorType is not CPU). Their section is InventoryProcessors.
	Accelerators       []Accelerator       `json:"accelerators,omitempty"`
	Memory             []MemoryModule      `json:"memory,omitempty"`
	StorageControllers []StorageController `json:"storageControllers,omitempty"`
	Drives             []Drive             `json:"drives,omitempty"`
	NetworkInterfaces  []NetworkInterface  `json:"networkInterfaces,omitempty"`
	Firmware           []FirmwareComponent `json:"firmware,omitempty"`
	// Unsupported lists the sections this BMC cannot report, so that an
	// empty list means "none" rather than "unknown".
	Unsupported []InventorySection `json:"unsupported,omitempty"`
	// Unreadable lists the resources of supported sections that the BMC
	// listed but did not answer with a readable document (a member, or a
	// whole section's collection), so that a section's list is complete
	// when no entry here names its section. The rest of the inventory was
	// read. At most MaxInventoryEntries entries, like the other lists.
	Unreadable []InventoryGap `json:"unreadable,omitempty"`
	// Truncated is set when a list had more than MaxInventoryEntries
	// entries or a string more than MaxInventoryString bytes, and was cut.
	Truncated bool `json:"truncated,omitempty"`
}

// SystemInfo identifies the system (Redfish ComputerSystem, IPMI FRU
// product area).
type SystemInfo struct {
	Manufacturer string `json:"manufacturer,omitempty"`
	Model        string `json:"model,omitempty"`
	SerialNumber string `json:"serialNumber,omitempty"`
	PartNumber   string `json:"partNumber,omitempty"`
	SKU          string `json:"sku,omitempty"`
	BIOSVersion  string `json:"biosVersion,omitempty"`
	UUID         string `json:"uuid,omitempty"`
}

// BoardInfo identifies the main board (IPMI FRU board area).
type BoardInfo struct {
	Manufacturer string `json:"manufacturer,omitempty"`
	Product      string `json:"product,omitempty"`
	SerialNumber string `json:"serialNumber,omitempty"`
	PartNumber   string `json:"partNumber,omitempty"`
}

// Processor is one CPU socket.
type Processor struct {
	ID           string `json:"id"`
	Manufacturer string `json:"manufacturer,omitempty"`
	Model        string `json:"model,omitempty"`
	Architecture string `json:"architecture,omitempty"`
	Cores        int32  `json:"cores,omitempty"`
	Threads      int32  `json:"threads,omitempty"`
	MaxSpeedMHz  int32  `json:"maxSpeedMHz,omitempty"`
}

// Accelerator is one GPU, FPGA or other processor that is not a CPU.
type Accelerator struct {
	ID string `json:"id"`
	// Type is the BMC's word for it, e.g. GPU, FPGA, Accelerator, DSP, OEM
	// (Redfish ProcessorType).
	Type         string `json:"type,omitempty"`
	Manufacturer string `json:"manufacturer,omitempty"`
	Model        string `json:"model,omitempty"`
	SerialNumber string `json:"serialNumber,omitempty"`
	PartNumber   string `json:"partNumber,omitempty"`
}

// InventoryGap is one resource the BMC listed for the inventory but did not
// answer with a readable document (Inventory.Unreadable).
type InventoryGap struct {
	// Section is the section the resource belongs to (a drive's is
	// InventoryStorage; a member of the Processors collection, CPU or
	// accelerator, InventoryProcessors).
	Section InventorySection `json:"section"`
	// Path is the resource's path on the BMC, without scheme, host,
	// credentials or query, e.g. /redfish/v1/Systems/1/Storage/1/Drives/3.
	Path string `json:"path"`
	// Reason is one line saying what the BMC answered, e.g.
	// "HTTP 404 Not Found: Base.1.8.ResourceMissingAtURI".
	Reason string `json:"reason"`
}

// MemoryModule is one memory device (DIMM).
type MemoryModule struct {
	ID           string `json:"id"`
	Manufacturer string `json:"manufacturer,omitempty"`
	PartNumber   string `json:"partNumber,omitempty"`
	SerialNumber string `json:"serialNumber,omitempty"`
	// Type is the device type, e.g. DDR5.
	Type        string `json:"type,omitempty"`
	CapacityMiB int64  `json:"capacityMiB,omitempty"`
	SpeedMHz    int32  `json:"speedMHz,omitempty"`
}

// StorageController is one storage controller (RAID, HBA, NVMe).
type StorageController struct {
	ID string `json:"id"`
	// Storage is the ID of the storage subsystem it belongs to.
	Storage         string `json:"storage,omitempty"`
	Name            string `json:"name,omitempty"`
	Manufacturer    string `json:"manufacturer,omitempty"`
	Model           string `json:"model,omitempty"`
	FirmwareVersion string `json:"firmwareVersion,omitempty"`
}

// Drive is one disk or SSD.
type Drive struct {
	ID string `json:"id"`
	// Storage is the ID of the storage subsystem it hangs under.
	Storage      string `json:"storage,omitempty"`
	Name         string `json:"name,omitempty"`
	Manufacturer string `json:"manufacturer,omitempty"`
	Model        string `json:"model,omitempty"`
	SerialNumber string `json:"serialNumber,omitempty"`
	// MediaType is HDD or SSD; Protocol e.g. SATA, SAS, NVMe.
	MediaType     string `json:"mediaType,omitempty"`
	Protocol      string `json:"protocol,omitempty"`
	CapacityBytes int64  `json:"capacityBytes,omitempty"`
}

// NetworkInterface is one Ethernet interface of the system.
type NetworkInterface struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// MACAddress is lower case with colons, e.g. 0c:c4:7a:00:00:01.
	MACAddress string `json:"macAddress,omitempty"`
	SpeedMbps  int32  `json:"speedMbps,omitempty"`
	// LinkStatus is the BMC's word for it, e.g. LinkUp, LinkDown.
	LinkStatus string `json:"linkStatus,omitempty"`
}

// FirmwareComponent is one entry of the firmware inventory.
type FirmwareComponent struct {
	ID         string `json:"id"`
	Name       string `json:"name,omitempty"`
	Version    string `json:"version,omitempty"`
	Updateable bool   `json:"updateable,omitempty"`
	// Shared reports a component that is not this system's alone, on a
	// BMC that manages several systems (a multi-node enclosure): firmware
	// of the enclosure, its chassis or its BMC, whose update touches every
	// system behind the BMC. False on a BMC with one system. Redfish: a
	// member whose RelatedItem names no system, or several
	// (docs/firmware.md, "Multi-node BMCs").
	Shared bool `json:"shared,omitempty"`
}

// Bound cuts inv to the limits (MaxInventoryEntries per list,
// MaxInventoryString bytes per string, at a rune boundary, invalid UTF-8
// replaced), setting Truncated when anything was cut. Drivers call it before
// returning an inventory.
func (inv *Inventory) Bound() {
	cut := false
	s := func(p *string) {
		v := *p
		if !utf8.ValidString(v) {
			v = strings.ToValidUTF8(v, "\uFFFD")
		}
		if len(v) > MaxInventoryString {
			n := MaxInventoryString
			for n > 0 && !utf8.RuneStart(v[n]) {
				n--
			}
			v = v[:n]
			cut = true
		}
		*p = v
	}
	inv.Processors = boundList(inv.Processors, &cut)
	inv.Accelerators = boundList(inv.Accelerators, &cut)
	inv.Memory = boundList(inv.Memory, &cut)
	inv.StorageControllers = boundList(inv.StorageControllers, &cut)
	inv.Drives = boundList(inv.Drives, &cut)
	inv.NetworkInterfaces = boundList(inv.NetworkInterfaces, &cut)
	inv.Firmware = boundList(inv.Firmware, &cut)
	inv.Unreadable = boundList(inv.Unreadable, &cut)
	for _, p := range []*string{&inv.System.Manufacturer, &inv.System.Model, &inv.System.SerialNumber, &inv.System.PartNumber,
		&inv.System.SKU, &inv.System.BIOSVersion, &inv.System.UUID,
		&inv.Board.Manufacturer, &inv.Board.Product, &inv.Board.SerialNumber, &inv.Board.PartNumber} {
		s(p)
	}
	for i := range inv.Processors {
		p := &inv.Processors[i]
		for _, f := range []*string{&p.ID, &p.Manufacturer, &p.Model, &p.Architecture} {
			s(f)
		}
	}
	for i := range inv.Accelerators {
		a := &inv.Accelerators[i]
		for _, f := range []*string{&a.ID, &a.Type, &a.Manufacturer, &a.Model, &a.SerialNumber, &a.PartNumber} {
			s(f)
		}
	}
	for i := range inv.Memory {
		m := &inv.Memory[i]
		for _, f := range []*string{&m.ID, &m.Manufacturer, &m.PartNumber, &m.SerialNumber, &m.Type} {
			s(f)
		}
	}
	for i := range inv.StorageControllers {
		c := &inv.StorageControllers[i]
		for _, f := range []*string{&c.ID, &c.Storage, &c.Name, &c.Manufacturer, &c.Model, &c.FirmwareVersion} {
			s(f)
		}
	}
	for i := range inv.Drives {
		d := &inv.Drives[i]
		for _, f := range []*string{&d.ID, &d.Storage, &d.Name, &d.Manufacturer, &d.Model, &d.SerialNumber, &d.MediaType, &d.Protocol} {
			s(f)
		}
	}
	for i := range inv.NetworkInterfaces {
		n := &inv.NetworkInterfaces[i]
		for _, f := range []*string{&n.ID, &n.Name, &n.MACAddress, &n.LinkStatus} {
			s(f)
		}
	}
	for i := range inv.Firmware {
		f := &inv.Firmware[i]
		for _, p := range []*string{&f.ID, &f.Name, &f.Version} {
			s(p)
		}
	}
	for i := range inv.Unreadable {
		g := &inv.Unreadable[i]
		for _, f := range []*string{(*string)(&g.Section), &g.Path, &g.Reason} {
			s(f)
		}
	}
	if cut {
		inv.Truncated = true
	}
}

func boundList[T any](l []T, cut *bool) []T {
	if len(l) > MaxInventoryEntries {
		*cut = true
		return l[:MaxInventoryEntries:MaxInventoryEntries]
	}
	return l
}

// NormalizeMAC returns a MAC address in lower case with colons
// (0c:c4:7a:00:00:01) when s is one (with colons, dashes, dots or no
// separators), else s unchanged.
func NormalizeMAC(s string) string {
	var hex []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			hex = append(hex, c)
		case c >= 'A' && c <= 'F':
			hex = append(hex, c+'a'-'A')
		case c == ':' || c == '-' || c == '.':
		default:
			return s
		}
	}
	if len(hex) != 12 {
		return s
	}
	out := make([]byte, 0, 17)
	for i := 0; i < 12; i += 2 {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, hex[i], hex[i+1])
	}
	return string(out)
}

// IsPlaceholder reports whether s, an inventory string as a BMC sent it
// (a serial or part number, a model, a manufacturer, a MAC address), stands
// for "no value": empty or blank; "N/A", "NA", "Not Available", "Not
// Specified", "Unknown", "None", "To Be Filled By O.E.M.", "Default string"
// (any case, padding ignored); or only zeros with separators, such as the
// MAC 00:00:00:00:00:00 or an all-zero serial. Drivers report such values
// as empty.
func IsPlaceholder(s string) bool {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "n/a", "na", "not available", "notavailable", "not specified", "unknown", "none",
		"to be filled by o.e.m.", "default string":
		return true
	}
	zeros := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '0':
			zeros = true
		case ':', '-', '.':
		default:
			return false
		}
	}
	return zeros
}
