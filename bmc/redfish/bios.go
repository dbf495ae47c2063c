package redfish

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.BIOSConfigurer = (*Driver)(nil)

// biosCache is what the driver keeps of the system's BIOS for the
// connection: the attribute registry, read once.
type biosCache struct {
	registry *bmc.BIOSRegistry
}

// biosResource is what the driver reads from a Bios resource or its
// settings object.
type biosResource struct {
	registry string
	// attrs are the values as canonical text, kinds their JSON kind
	// ("string", "number", "bool"); null values (passwords) are left out.
	attrs bmc.BIOSAttributes
	kinds map[string]string
	// settings is the @Redfish.Settings SettingsObject, "" when the BMC
	// has none (it takes a PATCH on the Bios resource and applies it at
	// once); onReset is set when SupportedApplyTimes lists OnReset.
	settings string
	onReset  bool
}

// decodeBIOS decodes a Bios resource (or settings object).
func decodeBIOS(b []byte) (biosResource, error) {
	var doc struct {
		AttributeRegistry string
		Attributes        map[string]json.RawMessage
		Settings          *struct {
			SettingsObject      schemas.Link
			SupportedApplyTimes []string
		} `json:"@Redfish.Settings"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return biosResource{}, fmt.Errorf("invalid Bios: %w", err)
	}
	r := biosResource{registry: doc.AttributeRegistry, attrs: bmc.BIOSAttributes{}, kinds: map[string]string{}}
	for k, raw := range doc.Attributes {
		v, kind, err := biosText(raw)
		if err != nil {
			return biosResource{}, fmt.Errorf("invalid Bios attribute %s: %w", k, err)
		}
		if kind == "" {
			continue // null: a password, or unset
		}
		r.attrs[k], r.kinds[k] = v, kind
	}
	if doc.Settings != nil {
		r.settings = string(doc.Settings.SettingsObject)
		r.onReset = slices.Contains(doc.Settings.SupportedApplyTimes, "OnReset")
	}
	return r, nil
}

// biosText renders a JSON attribute value as canonical text.
func biosText(raw json.RawMessage) (text, kind string, err error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", "", nil
	case raw[0] == '"':
		var s string
		err = json.Unmarshal(raw, &s)
		return s, "string", err
	case string(raw) == "true" || string(raw) == "false":
		return string(raw), "bool", nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", "", fmt.Errorf("value %.40s is not a string, number or boolean", raw)
	}
	if i, err := n.Int64(); err == nil {
		return strconv.FormatInt(i, 10), "number", nil
	}
	return n.String(), "number", nil
}

// readBIOS reads the Bios resource and, when it has one, its settings
// object: two GETs.
func (d *Driver) readBIOS(ctx context.Context) (cur, settings biosResource, err error) {
	// The link, read when the driver selected the system, does not change.
	uri, ok := d.sys.Sub[subBios]
	if !ok {
		return cur, settings, fmt.Errorf("the system %s links no Bios resource: %w", d.systemURI, bmc.ErrNotSupported)
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		if isNotFound(err) {
			return cur, settings, fmt.Errorf("the system's Bios %s is missing (404): %w", uri, bmc.ErrNotSupported)
		}
		return cur, settings, fmt.Errorf("read Bios: %w", err)
	}
	if cur, err = decodeBIOS(raw); err != nil {
		return cur, settings, bmc.Permanent(fmt.Errorf("GET %s: %w", uri, err))
	}
	if cur.settings == "" {
		// No settings object: a PATCH goes to the Bios resource itself and
		// applies at once; nothing is pending.
		return cur, biosResource{attrs: bmc.BIOSAttributes{}}, nil
	}
	raw = nil
	if _, err := d.getJSON(ctx, cur.settings, &raw); err != nil {
		return cur, settings, fmt.Errorf("read the Bios settings object: %w", err)
	}
	if settings, err = decodeBIOS(raw); err != nil {
		return cur, settings, bmc.Permanent(fmt.Errorf("GET %s: %w", cur.settings, err))
	}
	return cur, settings, nil
}

// pendingOf is what the settings object holds that differs from the
// current values: a BMC that copies every attribute there (iLO) and one
// that holds only the requested ones (Dell) read the same.
func pendingOf(cur, settings biosResource) bmc.BIOSAttributes {
	out := bmc.BIOSAttributes{}
	for k, v := range settings.attrs {
		if c, ok := cur.attrs[k]; !ok || c != v {
			out[k] = v
		}
	}
	return out
}

// BIOSSettings implements [bmc.BIOSConfigurer]: the Bios resource's
// Attributes and the values its @Redfish.Settings object holds that differ
// from them. Two GETs (one without a settings object). A system without a Bios
// resource fails with an error wrapping [bmc.ErrNotSupported].
func (d *Driver) BIOSSettings(ctx context.Context) (bmc.BIOSSettings, error) {
	const op = "read BIOS settings"
	done, err := d.begin()
	if err != nil {
		return bmc.BIOSSettings{}, d.opErr(op, err)
	}
	defer done()
	cur, settings, err := d.readBIOS(ctx)
	if err != nil {
		return bmc.BIOSSettings{}, d.opErr(op, err)
	}
	out := bmc.BIOSSettings{Attributes: cur.attrs, AttributeRegistry: cur.registry}
	if p := pendingOf(cur, settings); len(p) > 0 {
		out.Pending = p
	}
	return out, nil
}

// BIOSRegistry implements [bmc.BIOSConfigurer]: the attribute registry the
// Bios resource names, found under the service's Registries (the member
// with that Id, else the one whose Id or Registry matches) and read from
// its Location. It is read once per connection: three GETs the first time
// (the Bios, the registry file, the registry), none after. A BMC whose
// Registries lack it gets a registry made from the current attributes
// (their names and JSON types, no allowed values), so unknown attributes
// and wrong types are still refused.
func (d *Driver) BIOSRegistry(ctx context.Context) (bmc.BIOSRegistry, error) {
	const op = "read BIOS attribute registry"
	done, err := d.begin()
	if err != nil {
		return bmc.BIOSRegistry{}, d.opErr(op, err)
	}
	defer done()
	reg, err := d.biosRegistry(ctx)
	if err != nil {
		return bmc.BIOSRegistry{}, d.opErr(op, err)
	}
	return *reg, nil
}

func (d *Driver) biosRegistry(ctx context.Context) (*bmc.BIOSRegistry, error) {
	if d.bios.registry != nil {
		return d.bios.registry, nil
	}
	uri, ok := d.sys.Sub[subBios]
	if !ok {
		return nil, fmt.Errorf("the system %s links no Bios resource: %w", d.systemURI, bmc.ErrNotSupported)
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("the system's Bios %s is missing (404): %w", uri, bmc.ErrNotSupported)
		}
		return nil, fmt.Errorf("read Bios: %w", err)
	}
	cur, err := decodeBIOS(raw)
	if err != nil {
		return nil, bmc.Permanent(fmt.Errorf("GET %s: %w", uri, err))
	}
	reg, err := d.findRegistry(ctx, cur.registry)
	if err != nil {
		return nil, err
	}
	if reg == nil {
		d.logger(ctx).V(1).Info("the BMC does not serve the BIOS attribute registry; checking attributes against the current ones only", "registry", cur.registry)
		reg = registryFromAttributes(cur)
	}
	d.bios.registry = reg
	return reg, nil
}

// findRegistry finds and reads the attribute registry named name; nil
// when the service does not serve it.
func (d *Driver) findRegistry(ctx context.Context, name string) (*bmc.BIOSRegistry, error) {
	root := parseRootFeatures(d.s.wire.serviceRoot())
	if name == "" || root.Registries == "" {
		return nil, nil
	}
	base := strings.TrimRight(string(root.Registries), "/")
	var file registryFile
	var raw json.RawMessage
	_, err := d.getJSON(ctx, base+"/"+name, &raw)
	switch {
	case err == nil:
		if file, err = decodeRegistryFile(raw); err != nil {
			return nil, bmc.Permanent(fmt.Errorf("GET %s/%s: %w", base, name, err))
		}
	case isNotFound(err):
		uris, err := d.collection(ctx, base)
		if err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("list registries: %w", err)
		}
		found := false
		for _, u := range uris {
			raw = nil
			if _, err := d.getJSON(ctx, u, &raw); err != nil {
				return nil, fmt.Errorf("read registry file %s: %w", u, err)
			}
			f, err := decodeRegistryFile(raw)
			if err != nil {
				return nil, bmc.Permanent(fmt.Errorf("GET %s: %w", u, err))
			}
			if f.matches(name) {
				file, found = f, true
				break
			}
		}
		if !found {
			return nil, nil
		}
	default:
		return nil, fmt.Errorf("read registry file %s: %w", name, err)
	}
	if file.uri == "" {
		return nil, nil // published elsewhere only (PublicationUri): not on the BMC
	}
	raw = nil
	if _, err := d.getJSON(ctx, file.uri, &raw); err != nil {
		return nil, fmt.Errorf("read attribute registry %s: %w", file.uri, err)
	}
	reg, err := decodeAttributeRegistry(raw)
	if err != nil {
		return nil, bmc.Permanent(fmt.Errorf("GET %s: %w", file.uri, err))
	}
	if reg.ID == "" {
		reg.ID = name
	}
	return &reg, nil
}

// registryFile is what the driver reads from a MessageRegistryFile.
type registryFile struct {
	id, registry string
	uri          string // the Location to read: English first, else the first
}

func (f registryFile) matches(name string) bool {
	if f.id == name || f.registry == name {
		return true
	}
	prefix := func(s string) string { return strings.SplitN(s, ".", 2)[0] }
	return f.registry != "" && prefix(f.registry) == prefix(name) && strings.HasPrefix(prefix(name), "Bios")
}

func decodeRegistryFile(b []byte) (registryFile, error) {
	var f struct {
		ID       string `json:"Id"`
		Registry string
		Location []struct {
			Language string
			URI      string `json:"Uri"`
		}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return registryFile{}, fmt.Errorf("invalid MessageRegistryFile: %w", err)
	}
	out := registryFile{id: f.ID, registry: f.Registry}
	for _, l := range f.Location {
		if l.URI != "" && (out.uri == "" || strings.EqualFold(l.Language, "en")) {
			out.uri = l.URI
		}
	}
	return out, nil
}

// decodeAttributeRegistry decodes an AttributeRegistry's attributes.
func decodeAttributeRegistry(b []byte) (bmc.BIOSRegistry, error) {
	var r struct {
		ID              string `json:"Id"`
		RegistryEntries struct {
			Attributes []struct {
				AttributeName string
				Type          string
				ReadOnly      bool
				ResetRequired bool
				Value         []struct{ ValueName string }
				LowerBound    *int64
				UpperBound    *int64
				MinLength     *int64
				MaxLength     *int64
			}
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return bmc.BIOSRegistry{}, fmt.Errorf("invalid AttributeRegistry: %w", err)
	}
	reg := bmc.BIOSRegistry{ID: r.ID}
	for i, a := range r.RegistryEntries.Attributes {
		if a.AttributeName == "" {
			return bmc.BIOSRegistry{}, fmt.Errorf("invalid AttributeRegistry: attribute %d has no AttributeName", i)
		}
		def := bmc.BIOSAttributeDef{
			Name: a.AttributeName, Type: bmc.BIOSAttributeType(a.Type), ReadOnly: a.ReadOnly, ResetRequired: a.ResetRequired,
			LowerBound: a.LowerBound, UpperBound: a.UpperBound, MinLength: a.MinLength, MaxLength: a.MaxLength,
		}
		for _, v := range a.Value {
			def.Values = append(def.Values, v.ValueName)
		}
		reg.Attributes = append(reg.Attributes, def)
	}
	return reg, nil
}

// registryFromAttributes is the registry of a BMC that serves none: the
// current attributes, typed by their JSON kind.
func registryFromAttributes(cur biosResource) *bmc.BIOSRegistry {
	reg := &bmc.BIOSRegistry{ID: cur.registry}
	for _, k := range slices.Sorted(maps.Keys(cur.attrs)) {
		t := bmc.BIOSString
		switch cur.kinds[k] {
		case "number":
			t = bmc.BIOSInteger
		case "bool":
			t = bmc.BIOSBoolean
		}
		reg.Attributes = append(reg.Attributes, bmc.BIOSAttributeDef{Name: k, Type: t})
	}
	return reg
}

// SetBIOSAttributes implements [bmc.BIOSConfigurer]. It validates attrs
// against the registry ([Driver.BIOSRegistry], read once per connection)
// and sends nothing when one is invalid. It then reads the Bios resource
// and its settings object, and PATCHes the settings object with only the
// attributes whose value after the next boot (pending, else current)
// differs, typed as the registry says, with @Redfish.SettingsApplyTime
// OnReset where the BMC lists it; a BMC without a settings object gets the
// PATCH on the Bios resource. It reads both back: attributes now current
// were applied at once, those pending need the next boot
// (BIOSApply.RebootRequired); one in neither place fails the call. With
// nothing to send it sends no PATCH.
func (d *Driver) SetBIOSAttributes(ctx context.Context, attrs bmc.BIOSAttributes) (bmc.BIOSApply, error) {
	const op = "set BIOS attributes"
	done, err := d.begin()
	if err != nil {
		return bmc.BIOSApply{}, d.opErr(op, err)
	}
	defer done()
	res, err := d.setBIOS(ctx, attrs)
	if err != nil {
		return bmc.BIOSApply{}, d.opErr(op, err)
	}
	return res, nil
}

func (d *Driver) setBIOS(ctx context.Context, attrs bmc.BIOSAttributes) (bmc.BIOSApply, error) {
	reg, err := d.biosRegistry(ctx)
	if err != nil {
		return bmc.BIOSApply{}, err
	}
	if err := bmc.ValidateBIOSAttributes(*reg, attrs); err != nil {
		return bmc.BIOSApply{}, err
	}
	cur, settings, err := d.readBIOS(ctx)
	if err != nil {
		return bmc.BIOSApply{}, err
	}
	pending := pendingOf(cur, settings)
	send := map[string]any{}
	for k, v := range attrs {
		next, ok := pending[k]
		if !ok {
			next = cur.attrs[k]
		}
		if next == v {
			continue
		}
		jv, err := biosJSON(reg, cur, k, v)
		if err != nil {
			return bmc.BIOSApply{}, bmc.Permanent(err)
		}
		send[k] = jv
	}
	if len(send) > 0 {
		body := map[string]any{"Attributes": send}
		target := cur.settings
		if target == "" {
			target = d.sysBIOSURI()
		} else if cur.onReset {
			body["@Redfish.SettingsApplyTime"] = map[string]string{"ApplyTime": "OnReset"}
		}
		d.logger(ctx).V(1).Info("setting BIOS attributes", "uri", target, "attributes", slices.Sorted(maps.Keys(send)))
		if err := d.patch(ctx, target, body, ""); err != nil {
			return bmc.BIOSApply{}, fmt.Errorf("PATCH %s: %w", target, err)
		}
		if cur, settings, err = d.readBIOS(ctx); err != nil {
			return bmc.BIOSApply{}, fmt.Errorf("read back: %w", err)
		}
		pending = pendingOf(cur, settings)
	}
	res := bmc.BIOSApply{}
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[k]
		switch {
		case pending[k] == v:
			res.RebootRequired = true
		case cur.attrs[k] == v:
			if _, other := pending[k]; other {
				return res, bmc.Permanent(fmt.Errorf("the BMC applied %s=%q but still holds %q pending for it", k, v, pending[k]))
			}
		default:
			return res, bmc.Permanent(fmt.Errorf("the BMC answered the PATCH but dropped %s=%q: it reads %q and %q pending", k, v, cur.attrs[k], pending[k]))
		}
	}
	if len(pending) > 0 {
		res.Pending = pending
	}
	return res, nil
}

// sysBIOSURI is the system's Bios link (readBIOS succeeded, so it has one).
func (d *Driver) sysBIOSURI() string { return d.sys.Sub[subBios] }

// biosJSON is the JSON value to send for attribute k: the registry's type,
// else the current value's kind.
func biosJSON(reg *bmc.BIOSRegistry, cur biosResource, k, v string) (any, error) {
	t := bmc.BIOSString
	if def, ok := reg.Lookup(k); ok {
		t = def.Type
	} else {
		switch cur.kinds[k] {
		case "number":
			t = bmc.BIOSInteger
		case "bool":
			t = bmc.BIOSBoolean
		}
	}
	switch t {
	case bmc.BIOSInteger:
		n, err := bmc.ParseBIOSInteger(v)
		if err != nil {
			return nil, &bmc.BIOSAttributeError{Attribute: k, Value: v, Reason: err.Error()}
		}
		return n, nil
	case bmc.BIOSBoolean:
		return v == "true", nil
	}
	return v, nil
}
