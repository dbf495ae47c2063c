package bmctest

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// inventory checks bmc.InventoryReader: the result is bounded and well
// formed, reading it changes nothing, and it is what Options.Inventory
// says when that is set.
func (s *suite) inventory(t *testing.T, path string) {
	s.run(t, path, "Read", func(tc *tcase) {
		r := tc.inventoryReader()
		st, err := tc.readPower()
		tc.noErr("PowerState before Inventory", err)
		inv, err := r.Inventory(tc.ctx())
		if err != nil {
			tc.requireOpError("Inventory", err)
			tc.Fatalf("Inventory: %v", err)
		}
		tc.checkInventory(inv)
		again, err := r.Inventory(tc.ctx())
		tc.noErr("Inventory again", err)
		if got, want := inventoryIDs(again), inventoryIDs(inv); !reflect.DeepEqual(got, want) {
			tc.Errorf("a second Inventory lists other components: %v, first %v", got, want)
		}
		if st2, err := tc.readPower(); err == nil && !st.Transitional() && st2 != st {
			tc.Errorf("the power state changed from %s to %s across Inventory; reading must change nothing", st, st2)
		}
		if want := tc.opts.Inventory; want != nil && !reflect.DeepEqual(inv, *want) {
			tc.Errorf("Inventory = %+v\nwant (Options.Inventory) %+v", inv, *want)
		}
	})
}

func (tc *tcase) inventoryReader() bmc.InventoryReader {
	tc.Helper()
	r, ok := tc.drv.(bmc.InventoryReader)
	if !ok {
		tc.Skipf("%T does not implement bmc.InventoryReader", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityInventory) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityInventory, bmc.CapabilityInventory)
	}
	return r
}

// checkInventory checks the documented shape: bounded lists and strings,
// an ID on every entry, MACs normalised, no placeholder or padding left in
// the strings bmc.IsPlaceholder is for, known section names, no section
// both reported and unsupported, unreadable entries with a section, a path
// (no scheme, host or credentials) and a one-line reason.
func (tc *tcase) checkInventory(inv bmc.Inventory) {
	tc.Helper()
	lists := map[bmc.InventorySection]int{
		bmc.InventoryProcessors: len(inv.Processors) + len(inv.Accelerators), bmc.InventoryMemory: len(inv.Memory),
		bmc.InventoryStorage: len(inv.StorageControllers) + len(inv.Drives), bmc.InventoryNetwork: len(inv.NetworkInterfaces),
		bmc.InventoryFirmware: len(inv.Firmware),
	}
	for _, n := range []int{len(inv.Processors), len(inv.Accelerators), len(inv.Memory), len(inv.StorageControllers), len(inv.Drives), len(inv.NetworkInterfaces), len(inv.Firmware), len(inv.Unreadable)} {
		if n > bmc.MaxInventoryEntries {
			tc.Errorf("an inventory list has %d entries, over bmc.MaxInventoryEntries (%d): call Inventory.Bound", n, bmc.MaxInventoryEntries)
		}
	}
	known := func(sec bmc.InventorySection) bool {
		switch sec {
		case bmc.InventorySystem, bmc.InventoryBoard, bmc.InventoryProcessors, bmc.InventoryMemory, bmc.InventoryStorage, bmc.InventoryNetwork, bmc.InventoryFirmware:
			return true
		}
		return false
	}
	for _, sec := range inv.Unsupported {
		if !known(sec) {
			tc.Errorf("Inventory.Unsupported lists %q, not a bmc.InventorySection", sec)
		}
		if lists[sec] > 0 {
			tc.Errorf("Inventory.Unsupported lists %q, yet the inventory has %d entries of it", sec, lists[sec])
		}
	}
	for i, g := range inv.Unreadable {
		if !known(g.Section) || slices.Contains(inv.Unsupported, g.Section) {
			tc.Errorf("Inventory.Unreadable[%d] names section %q: not a bmc.InventorySection, or one listed as unsupported", i, g.Section)
		}
		if g.Path == "" || strings.Contains(g.Path, "://") || strings.ContainsAny(g.Path, "@?") {
			tc.Errorf("Inventory.Unreadable[%d] path %q: want the resource's path, without scheme, host, credentials or query", i, g.Path)
		}
		if g.Reason == "" || strings.ContainsAny(g.Reason, "\r\n") {
			tc.Errorf("Inventory.Unreadable[%d] reason %q: want one line", i, g.Reason)
		}
		if pw := tc.target.Credentials.Password; pw != "" && (strings.Contains(g.Path, pw) || strings.Contains(g.Reason, pw)) {
			tc.Errorf("Inventory.Unreadable[%d] carries the password", i)
		}
	}
	values := func(what, id string, vs ...string) {
		for _, v := range vs {
			if v != "" && (bmc.IsPlaceholder(v) || strings.TrimSpace(v) != v) {
				tc.Errorf("%s %s: %q is a placeholder or padded; report it empty or trimmed (bmc.IsPlaceholder)", what, id, v)
			}
		}
	}
	total := 0
	for _, n := range lists {
		total += n
	}
	if total == 0 && len(inv.Unreadable) == 0 && inv.System == (bmc.SystemInfo{}) && inv.Board == (bmc.BoardInfo{}) {
		tc.Errorf("Inventory is empty; a BMC that reports nothing must fail with bmc.ErrNotSupported")
	}
	ids := func(what string, ids []string) {
		for i, id := range ids {
			if id == "" {
				tc.Errorf("%s[%d] has no ID", what, i)
			}
		}
	}
	var p, a, m, c, d, n, f []string
	for _, x := range inv.Processors {
		p = append(p, x.ID)
		values("Processors", x.ID, x.Manufacturer, x.Model)
	}
	for _, x := range inv.Accelerators {
		a = append(a, x.ID)
		values("Accelerators", x.ID, x.Manufacturer, x.Model, x.SerialNumber, x.PartNumber)
	}
	for _, x := range inv.Memory {
		m = append(m, x.ID)
		values("Memory", x.ID, x.Manufacturer, x.PartNumber, x.SerialNumber)
	}
	for _, x := range inv.StorageControllers {
		c = append(c, x.ID)
		values("StorageControllers", x.ID, x.Manufacturer, x.Model)
	}
	for _, x := range inv.Drives {
		d = append(d, x.ID)
		values("Drives", x.ID, x.Manufacturer, x.Model, x.SerialNumber)
	}
	for _, x := range inv.NetworkInterfaces {
		n = append(n, x.ID)
		if x.MACAddress != "" && bmc.NormalizeMAC(x.MACAddress) != x.MACAddress {
			tc.Errorf("NetworkInterfaces %s: MAC %q is not normalised (want %q)", x.ID, x.MACAddress, bmc.NormalizeMAC(x.MACAddress))
		}
		values("NetworkInterfaces", x.ID, x.MACAddress)
	}
	for _, x := range inv.Firmware {
		f = append(f, x.ID)
	}
	ids("Processors", p)
	ids("Accelerators", a)
	ids("Memory", m)
	ids("StorageControllers", c)
	ids("Drives", d)
	ids("NetworkInterfaces", n)
	ids("Firmware", f)
	bounded := inv
	bounded.Bound()
	if !reflect.DeepEqual(bounded, inv) {
		tc.Errorf("Inventory is not bounded (a string over bmc.MaxInventoryString bytes or invalid UTF-8): call Inventory.Bound")
	}
}

// inventoryIDs lists an inventory's component IDs per section, sorted.
func inventoryIDs(inv bmc.Inventory) map[string][]string {
	out := map[string][]string{}
	add := func(k, id string) { out[k] = append(out[k], id) }
	for _, x := range inv.Processors {
		add("processors", x.ID)
	}
	for _, x := range inv.Accelerators {
		add("accelerators", x.ID)
	}
	for _, x := range inv.Memory {
		add("memory", x.ID)
	}
	for _, x := range inv.StorageControllers {
		add("controllers", x.Storage+"/"+x.ID)
	}
	for _, x := range inv.Drives {
		add("drives", x.Storage+"/"+x.ID)
	}
	for _, x := range inv.NetworkInterfaces {
		add("network", x.ID+"="+x.MACAddress)
	}
	for _, x := range inv.Firmware {
		add("firmware", x.ID)
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// checkUnsupportedInventoryBIOS checks Unsupported/inventory and
// Unsupported/bios: every method fails with bmc.ErrNotSupported.
func (tc *tcase) checkUnsupportedInventoryBIOS(c Capability) {
	tc.Helper()
	ctx := tc.ctx()
	switch c {
	case bmc.CapabilityInventory:
		r, ok := tc.drv.(bmc.InventoryReader)
		if !ok {
			tc.Skipf("%T does not implement bmc.InventoryReader", tc.drv)
		}
		_, err := r.Inventory(ctx)
		tc.requireNotSupported("Inventory", err)
	case bmc.CapabilityBIOS:
		b, ok := tc.drv.(bmc.BIOSConfigurer)
		if !ok {
			tc.Skipf("%T does not implement bmc.BIOSConfigurer", tc.drv)
		}
		_, err := b.BIOSSettings(ctx)
		tc.requireNotSupported("BIOSSettings", err)
		_, err = b.BIOSRegistry(ctx)
		tc.requireNotSupported("BIOSRegistry", err)
		_, err = b.SetBIOSAttributes(ctx, bmc.BIOSAttributes{"BootMode": "Uefi"})
		tc.requireNotSupported("SetBIOSAttributes", err)
	}
}
