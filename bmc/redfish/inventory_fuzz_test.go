package redfish

import (
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

var inventorySeeds = []string{
	`{"@odata.id":"/redfish/v1/Systems/1/Processors/CPU1","Id":"CPU1","Manufacturer":"Intel","Model":"Xeon","ProcessorArchitecture":"x86","TotalCores":32,"TotalThreads":64,"MaxSpeedMHz":3400,"ProcessorType":"CPU","Status":{"State":"Enabled"}}`,
	`{"@odata.id":"/redfish/v1/Systems/1/Processors/GPU0","ProcessorType":"GPU"}`,
	`{"Id":"DIMM1","MemoryDeviceType":"DDR5","CapacityMiB":32768,"OperatingSpeedMhz":4800,"SerialNumber":" 1234 ","Status":{"State":"Absent"}}`,
	`{"Id":"1","Drives":[{"@odata.id":"/d/1"}],"StorageControllers":[{"MemberId":"0","Name":"RAID","FirmwareVersion":"1"}],"Controllers":{"@odata.id":"/c"}}`,
	`{"Id":"Disk0","MediaType":"SSD","Protocol":"NVMe","CapacityBytes":960197124096}`,
	`{"Id":"NIC1","MACAddress":"0C:C4:7A:00:00:01","SpeedMbps":25000,"LinkStatus":"LinkUp"}`,
	`{"Id":"NIC2","PermanentMACAddress":"0cc4.7a00.0002","MACAddress":""}`,
	`{"Id":"BMC","Name":"BMC","Version":"1.2.3","Updateable":true}`,
	`{"Members":[{"@odata.id":"/a"},{"@odata.id":"/b","Id":"b","Version":"2"}]}`,
	`{"Members":[{}]}`,
	`{"TotalCores":-1,"CapacityMiB":1e40}`,
	`[]`, `null`, ``,
}

// FuzzDecodeInventory feeds documents through every inventory decoder:
// none panics, and what they accept bounds (Inventory.Bound) without
// panicking; decoded MACs are normalised when they are MACs.
func FuzzDecodeInventory(f *testing.F) {
	for _, s := range inventorySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var inv bmc.Inventory
		if p, ok, err := decodeProcessor(b); err == nil && ok {
			inv.Processors = append(inv.Processors, p)
		}
		if m, ok, err := decodeMemory(b); err == nil && ok {
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
			inv.StorageControllers = append(inv.StorageControllers, c)
		}
		if d, err := decodeDrive(b, "s"); err == nil {
			inv.Drives = append(inv.Drives, d)
		}
		if n, err := decodeEthernet(b); err == nil {
			if m := bmc.NormalizeMAC(n.MACAddress); m != n.MACAddress {
				t.Fatalf("MAC %q not normalised (%q)", n.MACAddress, m)
			}
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
		if r, err := decodeBIOS(b); err == nil {
			for k, v := range r.attrs {
				if r.kinds[k] == "bool" && v != "true" && v != "false" {
					t.Fatalf("boolean %s read as %q", k, v)
				}
			}
			_ = registryFromAttributes(r)
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
