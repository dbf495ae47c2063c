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
// whose collection answers 404, is listed in Inventory.Unsupported.
//
// Partial, never lost: a collection or member the BMC answers with an HTTP
// error (404 for a hot-removed disk or a stale link, 5xx after the retries,
// any other 4xx but 401, 403, 408 and 429) or with a document that is not
// the resource is listed in Inventory.Unreadable, and reading goes on. Any
// other failure fails the call: the system document unreadable, rejected
// credentials, ctx done, the fence, a request the BMC did not answer, 408
// and 429 (see [bmc.Inventory]).
//
// Members of Processors whose ProcessorType is not CPU are accelerators;
// placeholders ([bmc.IsPlaceholder]) read as empty, padding is trimmed. The
// fields are decoded from each document directly, never through gofish's
// link-following helpers (see docs/inventory-bios.md).
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
		Manufacturer: reported(doc.Manufacturer), Model: reported(doc.Model), SerialNumber: reported(doc.SerialNumber), PartNumber: reported(doc.PartNumber),
		SKU: reported(doc.SKU), BIOSVersion: reported(doc.BiosVersion), UUID: reported(doc.UUID),
	}}
	root := parseRootFeatures(d.s.wire.serviceRoot())
	unsupported := func(sec bmc.InventorySection) { inv.Unsupported = append(inv.Unsupported, sec) }
	// skip lists a resource of sec in Unreadable when err is confined to
	// it; false: err fails the whole inventory.
	skip := func(sec bmc.InventorySection) func(path string, err error) bool {
		return func(path string, err error) bool {
			if ctx.Err() != nil || !confined(err) {
				return false
			}
			g := bmc.InventoryGap{Section: sec, Path: resourcePath(path), Reason: gapReason(err)}
			inv.Unreadable = append(inv.Unreadable, g)
			d.logger(ctx).V(1).Info("inventory: a resource the BMC lists is unreadable; listed in Inventory.Unreadable", "section", g.Section, "path", g.Path, "reason", g.Reason)
			return true
		}
	}
	sections := []struct {
		sec  bmc.InventorySection
		sub  string
		each func(body []byte) error
	}{
		{bmc.InventoryProcessors, subProcessors, func(b []byte) error {
			cpu, acc, err := decodeProcessor(b)
			if cpu != nil {
				inv.Processors = append(inv.Processors, *cpu)
			}
			if acc != nil {
				inv.Accelerators = append(inv.Accelerators, *acc)
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
		{bmc.InventoryStorage, subStorage, func(b []byte) error { return d.storage(ctx, root, b, &inv, skip(bmc.InventoryStorage)) }},
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
			ok, err = d.walkMembers(ctx, root, uri, s.each, skip(s.sec))
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
		// firmwareInventory stops at the first resource it cannot read:
		// when that failure is confined to it, the section is listed as
		// unreadable there, with the components read before it.
		if !skip(bmc.InventoryFirmware)(failedPath(err, string(root.UpdateService)), err) {
			return inv, fmt.Errorf("firmware: %w", err)
		}
		ok = true
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

// storage adds a Storage subsystem's controllers and drives. A controller
// or drive it cannot read goes to skip (see walkMembers); it returns the
// Storage document's own decoding error, or an error that fails the whole
// inventory.
func (d *Driver) storage(ctx context.Context, root rootFeatures, body []byte, inv *bmc.Inventory, skip func(path string, err error) bool) error {
	st, err := decodeStorage(body)
	if err != nil {
		return err
	}
	inv.StorageControllers = append(inv.StorageControllers, st.controllers...)
	if len(st.controllers) == 0 && st.controllersURI != "" {
		// Storage v1.15 and later: a Controllers collection instead of
		// the inline StorageControllers.
		if _, err := d.walkMembers(ctx, root, st.controllersURI, func(b []byte) error {
			c, err := decodeStorageController(b, st.id)
			if err == nil {
				inv.StorageControllers = append(inv.StorageControllers, c)
			}
			return err
		}, skip); err != nil {
			return fmt.Errorf("storage %s controllers: %w", st.id, err)
		}
	}
	for _, uri := range st.drives {
		var raw json.RawMessage
		if _, err := d.getJSON(ctx, uri, &raw); err != nil {
			if skip(uri, err) {
				continue
			}
			return &readError{path: uri, err: fmt.Errorf("drive %s: %w", uri, err)}
		}
		dr, err := decodeDrive(raw, st.id)
		if err != nil {
			if skip(uri, err) {
				continue
			}
			return &readError{path: uri, err: fmt.Errorf("drive %s: %w", uri, bmc.Permanent(err))}
		}
		inv.Drives = append(inv.Drives, dr)
	}
	return nil
}

// members reads a collection and calls each with every member's document:
// inline when the service expanded them ($expand, when the service root
// advertises it), else one GET per member. Reading stops at
// bmc.MaxInventoryEntries members plus one (enough to know the list was
// cut). ok is false when the collection answered 404. Any other failure
// ends it with an error, a *readError naming the resource.
func (d *Driver) members(ctx context.Context, root rootFeatures, uri string, each func(body []byte) error) (ok bool, err error) {
	return d.walkMembers(ctx, root, uri, each, nil)
}

// walkMembers is members that can go on past what it cannot read: for a
// failure of the collection or of one member (its GET, or each's error:
// each returns an error only when the document is not the resource, see
// invalidDoc, or when the whole inventory must fail), skip(path, err)
// reports whether the resource was listed as unreadable. Then the walk
// goes on past the member, or ends with ok true for the collection;
// otherwise, or when skip is nil, it ends with the error, as members.
func (d *Driver) walkMembers(ctx context.Context, root rootFeatures, uri string, each func(body []byte) error, skip func(path string, err error) bool) (ok bool, err error) {
	// fail is the error for what cause did to the resource at path
	// (wrapped: with what was being done), or nil when skip took it.
	fail := func(path string, cause, wrapped error) error {
		if skip != nil && skip(path, cause) {
			return nil
		}
		return &readError{path: path, err: wrapped}
	}
	get := uri
	if q := root.expandQuery(); q != "" {
		get = uri + q
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, get, &raw); err != nil {
		if isNotFound(err) {
			return false, nil
		}
		if err := fail(uri, err, err); err != nil {
			return false, err
		}
		return true, nil
	}
	ms, err := decodeCollection(raw)
	if err != nil {
		if err := fail(uri, &invalidDocError{err}, fmt.Errorf("GET %s: %w", uri, bmc.Permanent(err))); err != nil {
			return false, err
		}
		return true, nil
	}
	for i, m := range ms {
		if i > bmc.MaxInventoryEntries {
			break
		}
		body := m.inline
		if body == nil {
			var got json.RawMessage
			if _, err := d.getJSON(ctx, m.uri, &got); err != nil {
				if err := fail(m.uri, err, fmt.Errorf("read %s: %w", m.uri, err)); err != nil {
					return false, err
				}
				continue
			}
			body = got
		}
		if err := each(body); err != nil {
			// A document that is not the resource is permanent; an error
			// of a nested read (storage's drives) keeps its class.
			wrapped := err
			if invalidDoc(err) || skip == nil {
				wrapped = bmc.Permanent(err)
			}
			if err := fail(m.uri, err, fmt.Errorf("%s: %w", m.uri, wrapped)); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// readError is a failure to read one resource of the inventory; path is
// the resource's, as the BMC linked it.
type readError struct {
	path string
	err  error
}

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// failedPath is the path of the resource err failed to read (a
// *readError's), else fallback.
func failedPath(err error, fallback string) string {
	var re *readError
	if errors.As(err, &re) {
		return re.path
	}
	return fallback
}

// invalidDocError marks a document that is not the resource expected,
// where no JSON error says so.
type invalidDocError struct{ err error }

func (e *invalidDocError) Error() string { return e.err.Error() }
func (e *invalidDocError) Unwrap() error { return e.err }

// invalidDoc reports whether err says the BMC answered with a document
// that is not the resource expected: JSON that does not parse, or does
// not fit the resource's schema.
func invalidDoc(err error) bool {
	var (
		inv *invalidDocError
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	return errors.As(err, &inv) || errors.As(err, &syn) || errors.As(err, &typ)
}

// confined reports whether err, reading one resource of the inventory, is
// that resource's alone: the BMC answered it with an HTTP error other than
// 401, 403 (the credentials), 408 and 429 (come back later), or with a
// document that is not the resource. Anything else (no answer, the fence,
// a cancelled ctx, the request budget) fails the whole inventory.
func confined(err error) bool {
	if errors.Is(err, bmc.ErrUnauthorized) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		switch se.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooManyRequests:
			return false
		}
		return true
	}
	return invalidDoc(err)
}

// gapReason is the one-line reason for an Inventory.Unreadable entry: the
// BMC's HTTP answer, or what is wrong with the document. It names no URL
// (the entry's Path does).
func gapReason(err error) string {
	var se *StatusError
	if errors.As(err, &se) {
		return shorten(se.Error())
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return "the BMC answered invalid JSON: " + shorten(syn.Error())
	}
	return shorten(err.Error())
}

// resourcePath is uri without scheme, host (and credentials) or query.
func resourcePath(uri string) string {
	p := pathOf(uri)
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
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

// reported is an inventory string as the BMC sent it, trimmed, or "" when
// it is a placeholder for no value ([bmc.IsPlaceholder]).
func reported(s string) string {
	if bmc.IsPlaceholder(s) {
		return ""
	}
	return strings.TrimSpace(s)
}

// decodeProcessor decodes a member of a system's Processors: a CPU (no
// ProcessorType, or CPU), an accelerator (any other ProcessorType: GPU,
// FPGA, DSP, Accelerator, OEM, ...), or neither (an empty socket, or a
// Core, Thread or Partition listed on its own: a part of a processor).
func decodeProcessor(b []byte) (cpu *bmc.Processor, acc *bmc.Accelerator, err error) {
	var p struct {
		ID                       string `json:"Id"`
		ODataID                  string `json:"@odata.id"`
		Manufacturer, Model      string
		SerialNumber, PartNumber string
		ProcessorArchitecture    string
		TotalCores, TotalThreads *int32
		MaxSpeedMHz              *int32
		Status                   resourceStatus
		ProcessorType            string
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, nil, fmt.Errorf("invalid Processor: %w", err)
	}
	if p.Status.absent() {
		return nil, nil, nil
	}
	id := memberID(p.ID, p.ODataID)
	switch typ := strings.TrimSpace(p.ProcessorType); strings.ToUpper(typ) {
	case "", "CPU":
		return &bmc.Processor{
			ID: id, Manufacturer: reported(p.Manufacturer), Model: reported(p.Model), Architecture: p.ProcessorArchitecture,
			Cores: deref(p.TotalCores), Threads: deref(p.TotalThreads), MaxSpeedMHz: deref(p.MaxSpeedMHz),
		}, nil, nil
	case "CORE", "THREAD", "PARTITION":
		return nil, nil, nil
	default:
		return nil, &bmc.Accelerator{
			ID: id, Type: typ, Manufacturer: reported(p.Manufacturer), Model: reported(p.Model),
			SerialNumber: reported(p.SerialNumber), PartNumber: reported(p.PartNumber),
		}, nil
	}
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
		ID: memberID(m.ID, m.ODataID), Manufacturer: reported(m.Manufacturer), PartNumber: reported(m.PartNumber),
		SerialNumber: reported(m.SerialNumber), Type: m.MemoryDeviceType, CapacityMiB: deref(m.CapacityMiB), SpeedMHz: deref(m.OperatingSpeedMhz),
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
	return bmc.StorageController{ID: id, Storage: storage, Name: c.Name, Manufacturer: reported(c.Manufacturer), Model: reported(c.Model), FirmwareVersion: reported(c.FirmwareVersion)}, nil
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
		ID: memberID(d.ID, d.ODataID), Storage: storage, Name: d.Name, Manufacturer: reported(d.Manufacturer), Model: reported(d.Model),
		SerialNumber: reported(d.SerialNumber), MediaType: d.MediaType, Protocol: d.Protocol, CapacityBytes: deref(d.CapacityBytes),
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
	// "Not Available", an all-zero MAC: no MAC; the permanent one, when
	// the BMC knows it.
	mac := reported(e.MACAddress)
	if mac == "" {
		mac = reported(e.PermanentMACAddress)
	}
	return bmc.NetworkInterface{ID: memberID(e.ID, e.ODataID), Name: e.Name, MACAddress: bmc.NormalizeMAC(mac), SpeedMbps: deref(e.SpeedMbps), LinkStatus: e.LinkStatus}, nil
}

func deref[T int32 | int64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}
