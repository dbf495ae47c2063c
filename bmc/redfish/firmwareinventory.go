package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmckit/bmckit/bmc"
)

// Firmware inventory: the members of UpdateService.FirmwareInventory, or of
// UpdateService.SoftwareInventory where the service names no
// FirmwareInventory (Intel BMCs), as one system sees them. Every read of
// firmware inventory lives here: the Inventory's firmware section,
// FirmwareVersion, and the member StartFirmwareUpdate names in Targets.
//
// # Which members are the system's
//
// A multi-node BMC (an HPE Cray EX blade: one BMC, several systems) lists
// the whole enclosure's firmware in one inventory, every node's BIOS
// included. A member's RelatedItem links say what it belongs to; the
// systems a member names are the /Systems/{id} prefixes of those links
// (a link to /Systems/Node0/Processors/0 names Node0). The rule:
//
//   - a member naming one or more systems, none of them the driver's, is
//     another system's: left out of the Inventory, unknown to
//     FirmwareVersion, never a Target;
//   - every other member is kept: one naming the driver's system, and one
//     naming no system (its RelatedItem names a chassis or a manager, or it
//     has no RelatedItem at all);
//   - a kept member is Shared ([bmc.FirmwareComponent]) when the BMC
//     manages several systems and the member is not this system's alone:
//     it names no system, or names others besides this one. The driver
//     knows the BMC manages several systems when a member names another
//     system, else from the Systems collection, read once per driver and
//     only when a member names no system. On a BMC with one system nothing
//     is Shared.

// fwMember is one firmware inventory member as the driver reads it.
type fwMember struct {
	bmc.FirmwareComponent
	// uri is the member's @odata.id as the BMC listed it (a path), or ""
	// when it had none.
	uri string
	// systems are the systems its RelatedItem names (paths, as listed),
	// nil when it names none.
	systems []string
}

// firmwareInventory reads the firmware inventory for the Inventory's
// firmware section: the members of this system (see the rule above); ok is
// false when the service has no UpdateService or it names neither a
// FirmwareInventory nor a SoftwareInventory, or the collection answered
// 404. It stops at the first member it cannot read, returning the
// system's components read before it with the error (members' *readError).
func (d *Driver) firmwareInventory(ctx context.Context, root rootFeatures) (fw []bmc.FirmwareComponent, ok bool, err error) {
	if root.UpdateService == "" {
		return nil, false, nil
	}
	us, err := d.updateServiceDoc(ctx)
	if err != nil {
		if errors.Is(err, bmc.ErrNotSupported) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("read UpdateService: %w", err)
	}
	if us.inventory == "" {
		return nil, false, nil
	}
	var all []fwMember
	ok, err = d.members(ctx, root, us.inventory, func(b []byte) error {
		m, err := decodeFirmwareMember(b, "")
		if err == nil {
			all = append(all, m)
		}
		return err
	})
	if !ok && err == nil {
		return nil, false, nil
	}
	// On a failure, the components read before it go with the error
	// (Inventory lists the rest as unreadable where it can).
	mine, multi := d.systemMembers(all)
	if err == nil && !multi && slices.ContainsFunc(mine, func(m fwMember) bool { return len(m.systems) == 0 }) {
		n, cerr := d.systemCount(ctx, us)
		if cerr != nil {
			return nil, false, fmt.Errorf("list systems to tell shared firmware: %w", cerr)
		}
		multi = n > 1
	}
	for _, m := range mine {
		if m.uri != "" {
			us.remember(m.ID, m.uri)
		}
		c := m.FirmwareComponent
		c.Shared = multi && !d.ownMember(m)
		fw = append(fw, c)
	}
	return fw, ok, err
}

// systemMembers keeps the members of the driver's system (see the rule
// above); multi reports that a member named another system.
func (d *Driver) systemMembers(all []fwMember) (mine []fwMember, multi bool) {
	for _, m := range all {
		this := false
		for _, s := range m.systems {
			if sameSystem(s, d.systemURI) {
				this = true
			} else {
				multi = true
			}
		}
		if this || len(m.systems) == 0 {
			mine = append(mine, m)
		}
	}
	return mine, multi
}

// ownMember reports whether m names the driver's system and no other.
func (d *Driver) ownMember(m fwMember) bool {
	if len(m.systems) == 0 {
		return false
	}
	for _, s := range m.systems {
		if !sameSystem(s, d.systemURI) {
			return false
		}
	}
	return true
}

// belongs reports whether m is the driver's system's (kept by the rule).
func (d *Driver) belongs(m fwMember) bool {
	return len(m.systems) == 0 || slices.ContainsFunc(m.systems, func(s string) bool { return sameSystem(s, d.systemURI) })
}

// systemCount is the number of members of the Systems collection, read
// once per driver.
func (d *Driver) systemCount(ctx context.Context, us *updateService) (int, error) {
	if us.systems > 0 {
		return us.systems, nil
	}
	ms, err := d.collection(ctx, d.systemsURI())
	if err != nil {
		return 0, err
	}
	us.systems = max(len(ms), 1)
	return us.systems, nil
}

// sameSystem compares two system URIs (samePath).
func sameSystem(a, b string) bool { return samePath(a, b) }

// samePath compares two non-empty URIs by path, case-insensitively (iLO
// paths are), without a trailing slash.
func samePath(a, b string) bool {
	return a != "" && b != "" && strings.EqualFold(strings.TrimRight(pathOf(a), "/"), strings.TrimRight(pathOf(b), "/"))
}

// systemOf is the system a link names: its path up to /Systems/{id}, or ""
// when it names no system.
func systemOf(link string) string {
	p := pathOf(link)
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	segs := strings.Split(p, "/")
	for i := 0; i+1 < len(segs); i++ {
		if strings.EqualFold(segs[i], "Systems") && segs[i+1] != "" {
			return strings.Join(segs[:i+2], "/")
		}
	}
	return ""
}

// decodeFirmwareMember decodes a SoftwareInventory document. listed is the
// URI the collection listed it at ("" for an inline member), the member's
// URI when the document has no @odata.id. A RelatedItem that is not a list
// of links is taken as none: the property is informative, and a member is
// not refused for it.
func decodeFirmwareMember(b []byte, listed string) (fwMember, error) {
	var s struct {
		ID          string `json:"Id"`
		ODataID     string `json:"@odata.id"`
		Name        string
		Version     string
		Updateable  bool
		RelatedItem json.RawMessage
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fwMember{}, fmt.Errorf("invalid SoftwareInventory: %w", err)
	}
	uri := pathOf(s.ODataID)
	if uri == "" {
		uri = pathOf(listed)
	}
	m := fwMember{FirmwareComponent: bmc.FirmwareComponent{ID: memberID(s.ID, uri), Name: s.Name, Version: s.Version, Updateable: s.Updateable}, uri: uri}
	var links []struct {
		ID string `json:"@odata.id"`
	}
	if json.Unmarshal(s.RelatedItem, &links) == nil {
		for _, l := range links {
			if sys := systemOf(l.ID); sys != "" && !slices.ContainsFunc(m.systems, func(x string) bool { return sameSystem(x, sys) }) {
				m.systems = append(m.systems, sys)
			}
		}
	}
	return m, nil
}

// decodeSoftwareInventory decodes a SoftwareInventory document into the
// component it reports.
func decodeSoftwareInventory(b []byte) (bmc.FirmwareComponent, error) {
	m, err := decodeFirmwareMember(b, "")
	return m.FirmwareComponent, err
}

// maxListedComponents bounds the component IDs an error names.
const maxListedComponents = 16

// componentList names IDs for an error: sorted, each at most 64 bytes, at
// most maxListedComponents of them.
func componentList(ids []string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	more := 0
	if len(ids) > maxListedComponents {
		more = len(ids) - maxListedComponents
		ids = ids[:maxListedComponents]
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if len(id) > 64 {
			id = id[:64] + "..."
		}
		out = append(out, fmt.Sprintf("%q", id))
	}
	s := list(out)
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// firmwareMember finds component among the system's firmware inventory
// members and returns it as read now. A member found once is read again at
// the URI the BMC listed it at: one GET; otherwise the collection is
// listed (members inline where the service root advertises $expand) and
// its members read (the one whose last path segment is component first)
// until one has that Id. A component the inventory does
// not have, or that is another system's, is a permanent error naming it
// and the system's components.
func (d *Driver) firmwareMember(ctx context.Context, us *updateService, component string) (fwMember, error) {
	if us.inventory == "" {
		return fwMember{}, fmt.Errorf("the UpdateService %s names neither a FirmwareInventory nor a SoftwareInventory: %w", us.uri, bmc.ErrNotSupported)
	}
	if uri, ok := us.comps[component]; ok {
		m, err := d.readMember(ctx, uri)
		switch {
		case err == nil && m.ID == component && d.belongs(m):
			return m, nil
		case err != nil && !notFound(err):
			return fwMember{}, err
		}
		delete(us.comps, component) // moved or gone: look again
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, us.inventory+parseRootFeatures(d.s.wire.serviceRoot()).expandQuery(), &raw); err != nil {
		if notFound(err) {
			return fwMember{}, fmt.Errorf("GET %s: %w (%w)", us.inventory, bmc.ErrNotSupported, err)
		}
		return fwMember{}, fmt.Errorf("list %s %s: %w", us.invName, us.inventory, err)
	}
	listed, err := decodeCollection(raw)
	if err != nil {
		return fwMember{}, fmt.Errorf("GET %s: %w", us.inventory, bmc.Permanent(err))
	}
	if len(listed) > bmc.MaxInventoryEntries+1 {
		listed = listed[:bmc.MaxInventoryEntries+1]
	}
	// The likely member first: most BMCs name a member by its Id.
	slices.SortStableFunc(listed, func(a, b member) int {
		la, lb := strings.EqualFold(path.Base(strings.TrimRight(a.uri, "/")), component), strings.EqualFold(path.Base(strings.TrimRight(b.uri, "/")), component)
		switch {
		case la && !lb:
			return -1
		case lb && !la:
			return 1
		}
		return 0
	})
	var ids []string
	var found *fwMember
	for _, e := range listed {
		var m fwMember
		if e.inline != nil {
			m, err = decodeFirmwareMember(e.inline, e.uri)
		} else {
			m, err = d.readMember(ctx, e.uri)
		}
		if err != nil {
			if notFound(err) {
				continue // removed meanwhile
			}
			return fwMember{}, err
		}
		if m.uri == "" || !d.belongs(m) {
			continue
		}
		us.remember(m.ID, m.uri)
		if m.ID == component {
			found = &m
			break
		}
		ids = append(ids, m.ID)
	}
	if found != nil {
		return *found, nil
	}
	return fwMember{}, bmc.Permanent(fmt.Errorf("the %s %s has no component %q for system %s (it has: %s)",
		us.invName, us.inventory, shorten(component), d.systemURI, componentList(ids)))
}

// readMember GETs one firmware inventory member.
func (d *Driver) readMember(ctx context.Context, uri string) (fwMember, error) {
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		return fwMember{}, err
	}
	m, err := decodeFirmwareMember(raw, uri)
	if err != nil {
		return fwMember{}, fmt.Errorf("GET %s: %w", uri, bmc.Permanent(err))
	}
	return m, nil
}

// remember keeps where the BMC listed a component of the driver's system.
func (us *updateService) remember(id, uri string) {
	if us.comps == nil {
		us.comps = map[string]string{}
	}
	if len(us.comps) <= bmc.MaxInventoryEntries {
		us.comps[id] = uri
	}
}
