package redfish

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

var inventorySeeds = []string{
	`{"@odata.id":"/redfish/v1/Systems/1/Processors/CPU1","Id":"CPU1","Manufacturer":"Intel","Model":"Xeon","ProcessorArchitecture":"x86","TotalCores":32,"TotalThreads":64,"MaxSpeedMHz":3400,"ProcessorType":"CPU","Status":{"State":"Enabled"}}`,
	`{"@odata.id":"/redfish/v1/Systems/1/Processors/GPU0","ProcessorType":"GPU"}`,
	`{"@odata.id":"/redfish/v1/Systems/1/Processors/GPU1","Id":"GPU1","ProcessorType":"GPU","Manufacturer":"AMD","Model":"AMD Instinct MI200","SerialNumber":"G000101","PartNumber":"Not Available","Status":{"State":"Enabled"}}`,
	`{"Id":"FPGA0","ProcessorType":" FPGA ","Model":"N/A"}`,
	`{"Id":"CPU1","ProcessorType":"cpu","Manufacturer":"Advanced Micro Devices, Inc.","Model":"AMD EPYC 7763 64-Core Processor                ","TotalCores":64}`,
	`{"Id":"C0","ProcessorType":"Core"}`,
	`{"Id":7,"Name":"invalid member"}`,
	`{"Id":"DIMM2","Manufacturer":"Unknown","PartNumber":"N/A","SerialNumber":"00000000","Status":{"State":"Enabled"}}`,
	`{"Id":"DIMM1","MemoryDeviceType":"DDR5","CapacityMiB":32768,"OperatingSpeedMhz":4800,"SerialNumber":" 1234 ","Status":{"State":"Absent"}}`,
	`{"Id":"1","Drives":[{"@odata.id":"/d/1"}],"StorageControllers":[{"MemberId":"0","Name":"RAID","FirmwareVersion":"1"}],"Controllers":{"@odata.id":"/c"}}`,
	`{"Id":"Disk0","MediaType":"SSD","Protocol":"NVMe","CapacityBytes":960197124096}`,
	`{"Id":"NIC1","MACAddress":"0C:C4:7A:00:00:01","SpeedMbps":25000,"LinkStatus":"LinkUp"}`,
	`{"Id":"NIC2","PermanentMACAddress":"0cc4.7a00.0002","MACAddress":""}`,
	`{"Id":"NIC3","MACAddress":"Not Available"}`,
	`{"Id":"NIC4","MACAddress":"00:00:00:00:00:00","PermanentMACAddress":"0C:C4:7A:00:00:04"}`,
	`{"Id":"Disk1","Manufacturer":"  ","Model":"MTFDKCC960TFR   ","SerialNumber":"Not Specified"}`,
	`{"Id":"BMC","Name":"BMC","Version":"1.2.3","Updateable":true}`,
	`{"Members":[{"@odata.id":"/a"},{"@odata.id":"/b","Id":"b","Version":"2"}]}`,
	`{"Members":[{}]}`,
	`{"TotalCores":-1,"CapacityMiB":1e40}`,
	`[]`, `null`, ``,
}

// FuzzDecodeInventory feeds documents through every inventory decoder:
// none panics, and what they accept bounds (Inventory.Bound) without
// panicking; decoded MACs are normalised when they are MACs; no decoded
// serial, part number, model, manufacturer or MAC is a placeholder or
// padded; a member of Processors is a CPU, an accelerator or neither,
// never both; a decoding error is one the inventory lists as unreadable.
func FuzzDecodeInventory(f *testing.F) {
	for _, s := range inventorySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var inv bmc.Inventory
		clean := func(what string, vs ...string) {
			for _, v := range vs {
				if v != "" && (bmc.IsPlaceholder(v) || strings.TrimSpace(v) != v) {
					t.Fatalf("%s: %q decoded as a value (a placeholder, or padded)", what, v)
				}
			}
		}
		confinedErr := func(what string, err error) {
			if err != nil && !confined(err) {
				t.Fatalf("%s: decoding error %v would fail the whole inventory, not list the member as unreadable", what, err)
			}
		}
		cpu, acc, err := decodeProcessor(b)
		confinedErr("Processor", err)
		if cpu != nil && acc != nil {
			t.Fatalf("a member decoded as both CPU %+v and accelerator %+v", *cpu, *acc)
		}
		if cpu != nil {
			clean("Processor", cpu.Manufacturer, cpu.Model)
			inv.Processors = append(inv.Processors, *cpu)
		}
		if acc != nil {
			if acc.Type == "" || strings.EqualFold(acc.Type, "CPU") {
				t.Fatalf("accelerator of type %q", acc.Type)
			}
			clean("Accelerator", acc.Manufacturer, acc.Model, acc.SerialNumber, acc.PartNumber)
			inv.Accelerators = append(inv.Accelerators, *acc)
		}
		m, ok, err := decodeMemory(b)
		confinedErr("Memory", err)
		if err == nil && ok {
			clean("Memory", m.Manufacturer, m.PartNumber, m.SerialNumber)
			inv.Memory = append(inv.Memory, m)
		}
		if st, err := decodeStorage(b); err == nil {
			inv.StorageControllers = append(inv.StorageControllers, st.controllers...)
			for _, c := range st.controllers {
				if c.Storage != st.id {
					t.Fatalf("controller %+v not tied to storage %q", c, st.id)
				}
			}
		}
		if c, err := decodeStorageController(b, "s"); err == nil {
			clean("StorageController", c.Manufacturer, c.Model, c.FirmwareVersion)
			inv.StorageControllers = append(inv.StorageControllers, c)
		}
		d, err := decodeDrive(b, "s")
		confinedErr("Drive", err)
		if err == nil {
			clean("Drive", d.Manufacturer, d.Model, d.SerialNumber)
			inv.Drives = append(inv.Drives, d)
		}
		n, err := decodeEthernet(b)
		confinedErr("EthernetInterface", err)
		if err == nil {
			if m := bmc.NormalizeMAC(n.MACAddress); m != n.MACAddress {
				t.Fatalf("MAC %q not normalised (%q)", n.MACAddress, m)
			}
			clean("EthernetInterface", n.MACAddress)
			inv.NetworkInterfaces = append(inv.NetworkInterfaces, n)
		}
		if c, err := decodeSoftwareInventory(b); err == nil {
			inv.Firmware = append(inv.Firmware, c)
		}
		if ms, err := decodeCollection(b); err == nil {
			for _, m := range ms {
				if m.uri == "" {
					t.Fatalf("member without a URI: %+v", m)
				}
				if p := resourcePath(m.uri); strings.Contains(p, "://") || strings.Contains(p, "?") {
					t.Fatalf("member %q: path %q keeps a host or a query", m.uri, p)
				}
			}
		} else {
			inv.Unreadable = append(inv.Unreadable, bmc.InventoryGap{Section: bmc.InventoryStorage, Path: resourcePath(string(b)), Reason: gapReason(&invalidDocError{err})})
		}
		for _, g := range inv.Unreadable {
			if strings.ContainsAny(g.Reason, "\r\n") {
				t.Fatalf("reason %q is not one line", g.Reason)
			}
		}
		inv.Bound()
		_ = parseRootFeatures(b).expandQuery()
	})
}

var biosSeeds = []string{
	`{"AttributeRegistry":"BiosAttributeRegistry.v1_0_0","Attributes":{"BootMode":"Uefi","PxeRetryCount":3,"SriovEnable":false,"AdminPassword":null,"Ratio":1.5},"@Redfish.Settings":{"SettingsObject":{"@odata.id":"/redfish/v1/Systems/1/Bios/Settings"},"SupportedApplyTimes":["OnReset"]}}`,
	`{"Attributes":{"A":[1]}}`,
	`{"Id":"BiosAttributeRegistry.v1_0_0","Registry":"BiosAttributeRegistry.1.0","Location":[{"Language":"de","Uri":"/de"},{"Language":"en","Uri":"/en"}]}`,
	`{"Id":"r","RegistryEntries":{"Attributes":[{"AttributeName":"BootMode","Type":"Enumeration","Value":[{"ValueName":"Uefi"},{"ValueName":"Bios"}]},{"AttributeName":"N","Type":"Integer","LowerBound":0,"UpperBound":10},{"AttributeName":"S","Type":"String","MaxLength":8,"ReadOnly":true}]}}`,
	`{"RegistryEntries":{"Attributes":[{"Type":"String"}]}}`,
	`{"Attributes":{"BootMode":"\u0000"}}`,
	// HPE Cray EX: object values, arrays, a structured current_value.
	`{"Attributes":{"BootMode":{"AllowableValues":["Legacy","UEFI"],"current_value":"UEFI"},"SMT":{"current_value":true},"Cores":{"current_value":64},"Pw":{"current_value":null}}}`,
	`{"Attributes":{"BootOrder":["Pxe",
	  "Hdd"],"Topo":{"Channels":8,"Nested":{"a":[1,2]}},"Cv":{"current_value":{"x":1},"AllowableValues":["a"]},"Av":{"current_value":"a","AllowableValues":[1,2]}}}`,
	`{"Attributes":{}}`, `{"Attributes":null}`, `{"Attributes":[1]}`, `{"Attributes":"x"}`,
	`[]`, ``,
}

// FuzzDecodeBIOS feeds documents through the Bios, registry file and
// attribute registry decoders: none panics; accepted Bios values are
// canonical (integers round-trip, booleans are true/false); a decoded
// registry validates without panicking.
func FuzzDecodeBIOS(f *testing.F) {
	for _, s := range biosSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeBIOS(b)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || len(msg) > 300 {
				t.Fatalf("decodeBIOS error is not one bounded line: %q", msg)
			}
		} else {
			if len(r.attrs) > r.members {
				t.Fatalf("%d attributes read from %d members", len(r.attrs), r.members)
			}
			for k, v := range r.attrs {
				switch r.kinds[k] {
				case kindBool:
					if v != "true" && v != "false" {
						t.Fatalf("boolean %s read as %q", k, v)
					}
				case kindJSON:
					// Structured values are kept as compact JSON.
					if !json.Valid([]byte(v)) || strings.ContainsAny(v, "\r\n") {
						t.Fatalf("structured %s kept as %q, not compact JSON", k, v)
					}
				case kindString, kindNumber:
				default:
					t.Fatalf("%s has kind %q", k, r.kinds[k])
				}
			}
			reg := registryFromAttributes(r)
			for _, def := range reg.Attributes {
				if def.Type != "" {
					continue
				}
				// Unknown type: refused, naming it, on one line.
				err := bmc.ValidateBIOSAttributes(*reg, bmc.BIOSAttributes{def.Name: "1"})
				if err == nil || strings.ContainsAny(err.Error(), "\r\n") {
					t.Fatalf("attribute %s of unknown type: %v; want a one-line refusal", def.Name, err)
				}
			}
		}
		if q := quoteClip(string(b)); len(q) > maxQuoted+3 || strings.ContainsAny(q, "\r\n") {
			t.Fatalf("quoteClip = %q (%d bytes)", q, len(q))
		}
		if f, err := decodeRegistryFile(b); err == nil {
			_ = f.matches("BiosAttributeRegistry.v1_0_0")
		}
		if reg, err := decodeAttributeRegistry(b); err == nil {
			for _, a := range reg.Attributes {
				if a.Name == "" {
					t.Fatal("attribute without a name accepted")
				}
			}
			_ = bmc.ValidateBIOSAttributes(reg, bmc.BIOSAttributes{"BootMode": "Uefi", "N": "3", "S": "x"})
		}
	})
}
