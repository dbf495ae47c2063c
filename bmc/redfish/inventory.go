package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.InventoryReader = (*Driver)(nil)

// Subordinate resources of a ComputerSystem the driver follows
// (systemDoc.Sub).
const (
	subBios       = "Bios"
	subProcessors = "Processors"
	subMemory     = "Memory"
	subStorage    = "Storage"
	subEthernet   = "EthernetInterfaces"
)

// Inventory implements [bmc.InventoryReader]: the system's identity (from
// the system document, no request when it was read in the same job step),
// then each inventory collection the system links and each member: one GET
// per collection and per member, or one per collection when the service
// root advertises $expand (ProtocolFeaturesSupported.ExpandQuery), plus one
// per drive. The firmware inventory is the service's
// UpdateService.FirmwareInventory. A section the system does not link, or
// whose collection answers 404, is listed in Inventory.Unsupported; any
// other failure fails the call. The fields are decoded from each document
// directly, never through gofish's link-following helpers (see
// docs/inventory-bios.md).
func (d *Driver) Inventory(ctx context.Context) (bmc.Inventory, error) {
	const op = "read inventory"
	done, err := d.begin()
	if err != nil {
		return bmc.Inventory{}, d.opErr(op, err)
	}
	defer done()
	inv, err := d.inventory(ctx)
	if err != nil {
		return bmc.Inventory{}, d.opErr(op, err)
	}
	inv.Bound()
	return inv, nil
}

func (d *Driver) inventory(ctx context.Context) (bmc.Inventory, error) {
	doc, err := d.recentSystem(ctx)
	if err != nil {
		return bmc.Inventory{}, err
	}
	inv := bmc.Inventory{System: bmc.SystemInfo{
		Manufacturer: doc.Manufacturer, Model: doc.Model, SerialNumber: doc.SerialNumber, PartNumber: doc.PartNumber,
		SKU: doc.SKU, BIOSVersion: doc.BiosVersion, UUID: doc.UUID,
	}}
	root := parseRootFeatures(d.s.wire.serviceRoot())
	unsupported := func(sec bmc.InventorySection) { inv.Unsupported = append(inv.Unsupported, sec) }
	members := func(uri string, each func(body []byte) error) (bool, error) {
		return d.members(ctx, root, uri, each)
	}
	sections := []struct {
		sec  bmc.InventorySection
		sub  string
		each func(body []byte) error
	}{
		{bmc.InventoryProcessors, subProcessors, func(b []byte) error {
			p, ok, err := decodeProcessor(b)
			if ok {
				inv.Processors = append(inv.Processors, p)
			}
			return err
		}},
		{bmc.InventoryMemory, subMemory, func(b []byte) error {
			m, ok, err := decodeMemory(b)
			if ok {
				inv.Memory = append(inv.Memory, m)
			}
			return err
		}},
		{bmc.InventoryStorage, subStorage, func(b []byte) error { return d.storage(ctx, root, b, &inv) }},
		{bmc.InventoryNetwork, subEthernet, func(b []byte) error {
			n, err := decodeEthernet(b)
			if err == nil {
				inv.NetworkInterfaces = append(inv.NetworkInterfaces, n)
			}
			return err
		}},
	}
	for _, s := range sections {
		uri, ok := doc.Sub[s.sub]
		if ok {
			ok, err = members(uri, s.each)
			if err != nil {
				return inv, fmt.Errorf("%s: %w", s.sec, err)
			}
		}
		if !ok {
			unsupported(s.sec)
		}
	}
	fw, ok, err := d.firmwareInventory(ctx, root)
	if err != nil {
		return inv, fmt.Errorf("firmware: %w", err)
	}
	if !ok {
		unsupported(bmc.InventoryFirmware)
	}
	inv.Firmware = fw
	if len(inv.Unsupported) == 5 && inv.System == (bmc.SystemInfo{}) {
		return inv, fmt.Errorf("the system %s links none of Processors, Memory, Storage or EthernetInterfaces and the service has no firmware inventory: %w", d.systemURI, bmc.ErrNotSupported)
	}
	return inv, nil
}

// storage adds a Storage subsystem's controllers and drives.
func (d *Driver) storage(ctx context.Context, root rootFeatures, body []byte, inv *bmc.Inventory) error {
	st, err := decodeStorage(body)
	if err != nil {
		return err
	}
	inv.StorageControllers = append(inv.StorageControllers, st.controllers...)
	if len(st.controllers) == 0 && st.controllersURI != "" {
		// Storage v1.15 and later: a Controllers collection instead of
		// the inline StorageControllers.
		if _, err := d.members(ctx, root, st.controllersURI, func(b []byte) error {
			c, err := decodeStorageController(b, st.id)
			if err == nil {
				inv.StorageControllers = append(inv.StorageControllers, c)
			}
			return err
		}); err != nil {
			return fmt.Errorf("storage %s controllers: %w", st.id, err)
		}
	}
	for _, uri := range st.drives {
		var raw json.RawMessage
		if _, err := d.getJSON(ctx, uri, &raw); err != nil {
			return fmt.Errorf("drive %s: %w", uri, err)
		}
		dr, err := decodeDrive(raw, st.id)
		if err != nil {
			return fmt.Errorf("drive %s: %w", uri, err)
		}
		inv.Drives = append(inv.Drives, dr)
	}
	return nil
}

// firmwareInventory reads UpdateService.FirmwareInventory; ok is false
// when the service has none.
func (d *Driver) firmwareInventory(ctx context.Context, root rootFeatures) (fw []bmc.FirmwareComponent, ok bool, err error) {
	if root.UpdateService == "" {
		return nil, false, nil
	}
	var us struct{ FirmwareInventory schemas.Link }
	if _, err := d.getJSON(ctx, string(root.UpdateService), &us); err != nil {
		if isNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("read UpdateService: %w", err)
	}
	if us.FirmwareInventory == "" {
		return nil, false, nil
	}
	ok, err = d.members(ctx, root, string(us.FirmwareInventory), func(b []byte) error {
		c, err := decodeSoftwareInventory(b)
		if err == nil {
			fw = append(fw, c)
		}
		return err
	})
	return fw, ok, err
}

// members reads a collection and calls each with every member's document:
// inline when the service expanded them ($expand, when the service root
// advertises it), else one GET per member. Reading stops at
// bmc.MaxInventoryEntries members plus one (enough to know the list was
// cut). ok is false when the collection answered 404.
func (d *Driver) members(ctx context.Context, root rootFeatures, uri string, each func(body []byte) error) (ok bool, err error) {
	get := uri
	if q := root.expandQuery(); q != "" {
		get = uri + q
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, get, &raw); err != nil {
		if isNotFound(err) {
			return false, nil
		}
		return false, err
	}
	ms, err := decodeCollection(raw)
	if err != nil {
		return false, fmt.Errorf("GET %s: %w", uri, bmc.Permanent(err))
	}
	for i, m := range ms {
		if i > bmc.MaxInventoryEntries {
			break
		}
		body := m.inline
		if body == nil {
			var got json.RawMessage
			if _, err := d.getJSON(ctx, m.uri, &got); err != nil {
				return false, fmt.Errorf("read %s: %w", m.uri, err)
			}
			body = got
		}
		if err := each(body); err != nil {
			return false, fmt.Errorf("%s: %w", m.uri, bmc.Permanent(err))
		}
	}
	return true, nil
}

func isNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusNotFound
}

// rootFeatures is what the inventory reads from the service root.
type rootFeatures struct {
	UpdateService             schemas.Link
	Registries                schemas.Link
	ProtocolFeaturesSupported struct {
		ExpandQuery struct {
			ExpandAll, Levels, NoLinks bool
			MaxLevels                  int
		}
	}
}

func parseRootFeatures(b []byte) rootFeatures {
	var r rootFeatures
	_ = json.Unmarshal(b, &r) // a root without these (or unreadable) offers none of them
	return r
}

// expandQuery is the query that expands a collection's members one level,
// or "" when the service does not advertise it.
func (r rootFeatures) expandQuery() string {
	e := r.ProtocolFeaturesSupported.ExpandQuery
	switch {
	case !e.Levels:
		return ""
	case e.NoLinks:
		return "?$expand=.($levels=1)"
	case e.ExpandAll:
		return "?$expand=*($levels=1)"
	}
	return ""
}

// member is one entry of a collection's Members: a link, or the member
// itself when the service expanded it.
type member struct {
	uri    string
	inline []byte
}

// decodeCollection decodes a resource collection's Members.
func decodeCollection(b []byte) ([]member, error) {
	var c struct{ Members []map[string]json.RawMessage }
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("not a resource collection: %w", err)
	}
	out := make([]member, 0, len(c.Members))
	for i, m := range c.Members {
		var id string
		if err := json.Unmarshal(m["@odata.id"], &id); err != nil || id == "" {
			return nil, fmt.Errorf("Members[%d] has no @odata.id", i)
		}
		e := member{uri: id}
		if len(m) > 1 {
			e.inline, _ = json.Marshal(m)
		}
		out = append(out, e)
	}
	return out, nil
}

type resourceStatus struct{ State string }

// absent reports a member that describes an empty socket or slot.
func (s resourceStatus) absent() bool { return strings.EqualFold(s.State, "Absent") }

// memberID is a resource's Id, else the last segment of its @odata.id.
func memberID(id, odataID string) string {
	if id != "" {
		return id
	}
	odataID = strings.TrimRight(odataID, "/")
	return odataID[strings.LastIndex(odataID, "/")+1:]
}

func decodeProcessor(b []byte) (bmc.Processor, bool, error) {
	var p struct {
		ID                       string `json:"Id"`
		ODataID                  string `json:"@odata.id"`
		Manufacturer, Model      string
		ProcessorArchitecture    string
		TotalCores, TotalThreads *int32
		MaxSpeedMHz              *int32
		Status                   resourceStatus
		ProcessorType            string
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return bmc.Processor{}, false, fmt.Errorf("invalid Processor: %w", err)
	}
	if p.Status.absent() || (p.ProcessorType != "" && !strings.EqualFold(p.ProcessorType, "CPU")) {
		return bmc.Processor{}, false, nil // an empty socket, or a GPU/FPGA
	}
	return bmc.Processor{
		ID: memberID(p.ID, p.ODataID), Manufacturer: p.Manufacturer, Model: p.Model, Architecture: p.ProcessorArchitecture,
		Cores: deref(p.TotalCores), Threads: deref(p.TotalThreads), MaxSpeedMHz: deref(p.MaxSpeedMHz),
	}, true, nil
}

func decodeMemory(b []byte) (bmc.MemoryModule, bool, error) {
	var m struct {
		ID                                     string `json:"Id"`
		ODataID                                string `json:"@odata.id"`
		Manufacturer, PartNumber, SerialNumber string
		MemoryDeviceType                       string
		CapacityMiB                            *int64
		OperatingSpeedMhz                      *int32
		Status                                 resourceStatus
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return bmc.MemoryModule{}, false, fmt.Errorf("invalid Memory: %w", err)
	}
	if m.Status.absent() {
		return bmc.MemoryModule{}, false, nil
	}
	return bmc.MemoryModule{
		ID: memberID(m.ID, m.ODataID), Manufacturer: strings.TrimSpace(m.Manufacturer), PartNumber: strings.TrimSpace(m.PartNumber),
		SerialNumber: strings.TrimSpace(m.SerialNumber), Type: m.MemoryDeviceType, CapacityMiB: deref(m.CapacityMiB), SpeedMHz: deref(m.OperatingSpeedMhz),
	}, true, nil
}

// storageDoc is what the driver reads from a Storage resource.
type storageDoc struct {
	id             string
	controllers    []bmc.StorageController
	controllersURI string
	drives         []string
}

func decodeStorage(b []byte) (storageDoc, error) {
	var s struct {
		ID                 string `json:"Id"`
		ODataID            string `json:"@odata.id"`
		Drives             schemas.Links
		StorageControllers []json.RawMessage
		Controllers        schemas.Link
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return storageDoc{}, fmt.Errorf("invalid Storage: %w", err)
	}
	out := storageDoc{id: memberID(s.ID, s.ODataID), controllersURI: string(s.Controllers), drives: s.Drives.ToStrings()}
	for _, c := range s.StorageControllers {
		sc, err := decodeStorageController(c, out.id)
		if err != nil {
			return storageDoc{}, err
		}
		out.controllers = append(out.controllers, sc)
	}
	return out, nil
}

// decodeStorageController decodes an inline StorageControllers entry or a
// StorageController resource.
func decodeStorageController(b []byte, storage string) (bmc.StorageController, error) {
	var c struct {
		ID                                         string `json:"Id"`
		MemberID                                   string `json:"MemberId"`
		ODataID                                    string `json:"@odata.id"`
		Name, Manufacturer, Model, FirmwareVersion string
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return bmc.StorageController{}, fmt.Errorf("invalid StorageController: %w", err)
	}
	id := c.ID
	if id == "" {
		id = c.MemberID
	}
	if id == "" {
		id = memberID("", c.ODataID)
	}
	return bmc.StorageController{ID: id, Storage: storage, Name: c.Name, Manufacturer: c.Manufacturer, Model: c.Model, FirmwareVersion: c.FirmwareVersion}, nil
}

func decodeDrive(b []byte, storage string) (bmc.Drive, error) {
	var d struct {
		ID                                      string `json:"Id"`
		ODataID                                 string `json:"@odata.id"`
		Name, Manufacturer, Model, SerialNumber string
		MediaType, Protocol                     string
		CapacityBytes                           *int64
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return bmc.Drive{}, fmt.Errorf("invalid Drive: %w", err)
	}
	return bmc.Drive{
		ID: memberID(d.ID, d.ODataID), Storage: storage, Name: d.Name, Manufacturer: d.Manufacturer, Model: d.Model,
		SerialNumber: strings.TrimSpace(d.SerialNumber), MediaType: d.MediaType, Protocol: d.Protocol, CapacityBytes: deref(d.CapacityBytes),
	}, nil
}

func decodeEthernet(b []byte) (bmc.NetworkInterface, error) {
	var e struct {
		ID                              string `json:"Id"`
		ODataID                         string `json:"@odata.id"`
		Name                            string
		MACAddress, PermanentMACAddress string
		SpeedMbps                       *int32
		LinkStatus                      string
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return bmc.NetworkInterface{}, fmt.Errorf("invalid EthernetInterface: %w", err)
	}
	mac := e.MACAddress
	if mac == "" {
		mac = e.PermanentMACAddress
	}
	return bmc.NetworkInterface{ID: memberID(e.ID, e.ODataID), Name: e.Name, MACAddress: bmc.NormalizeMAC(mac), SpeedMbps: deref(e.SpeedMbps), LinkStatus: e.LinkStatus}, nil
}

func decodeSoftwareInventory(b []byte) (bmc.FirmwareComponent, error) {
	var s struct {
		ID         string `json:"Id"`
		ODataID    string `json:"@odata.id"`
		Name       string
		Version    string
		Updateable bool
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return bmc.FirmwareComponent{}, fmt.Errorf("invalid SoftwareInventory: %w", err)
	}
	return bmc.FirmwareComponent{ID: memberID(s.ID, s.ODataID), Name: s.Name, Version: s.Version, Updateable: s.Updateable}, nil
}

func deref[T int32 | int64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}
