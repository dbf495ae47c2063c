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
	"unicode"
	"unicode/utf8"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.BIOSConfigurer = (*Driver)(nil)

// biosCache is what the driver keeps of the system's BIOS for the
// connection: the attribute registry, read once.
type biosCache struct {
	registry *bmc.BIOSRegistry
}

// The JSON kinds of attribute values (biosResource.kinds).
const (
	kindString = "string"
	kindNumber = "number"
	kindBool   = "bool"
	// kindJSON is a structured value (an array, an object without a
	// scalar current_value) kept as its compact JSON text: the driver
	// cannot tell its type from it.
	kindJSON = "json"
)

// biosResource is what the driver reads from a Bios resource or its
// settings object.
type biosResource struct {
	registry string
	// attrs are the values as canonical text, kinds their JSON kind
	// (kindString, ...); null values (passwords) are left out.
	attrs bmc.BIOSAttributes
	kinds map[string]string
	// allowed are the AllowableValues an object value lists next to its
	// current_value (HPE Cray EX), for string values.
	allowed map[string][]string
	// members counts the members of Attributes, null ones included: 0
	// when Attributes is absent, null or {}.
	members int
	// settings is the @Redfish.Settings (settings.go): no object when the
	// BMC takes a PATCH on the Bios resource and applies it at once.
	settings settingsRef
}

// decodeBIOS decodes a Bios resource (or settings object). No attribute
// value fails it: whatever its shape, a value is read (biosValue).
func decodeBIOS(b []byte) (biosResource, error) {
	var doc struct {
		AttributeRegistry string
		Attributes        json.RawMessage
		settingsAnnotation
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return biosResource{}, fmt.Errorf("invalid Bios: %w", err)
	}
	var attrs map[string]json.RawMessage
	if a := bytes.TrimSpace(doc.Attributes); len(a) > 0 && string(a) != "null" {
		if a[0] != '{' || json.Unmarshal(a, &attrs) != nil {
			return biosResource{}, fmt.Errorf("invalid Bios: Attributes is %s, not an object", jsonKindOf(a))
		}
	}
	r := biosResource{registry: doc.AttributeRegistry, attrs: bmc.BIOSAttributes{}, kinds: map[string]string{},
		allowed: map[string][]string{}, members: len(attrs)}
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		v, kind, allowed := biosValue(attrs[k])
		if kind == "" {
			continue // null: a password, or unset
		}
		r.attrs[k], r.kinds[k] = v, kind
		if len(allowed) > 0 {
			r.allowed[k] = allowed
		}
	}
	r.settings = doc.ref()
	return r, nil
}

// biosValue reads one attribute value (valid JSON, from a decoded
// document) as canonical text and its kind; kind "" for null. An object
// with a current_value (HPE Cray EX: {"AllowableValues": [...],
// "current_value": "UEFI"}) is read as its current_value, with the
// AllowableValues when that is a string; any other object or array, and a
// structured current_value, is kept as compact JSON (kindJSON).
func biosValue(raw json.RawMessage) (text, kind string, allowed []string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			if cv, ok := obj["current_value"]; ok {
				if text, kind = biosScalar(cv); kind == kindString {
					var vs []string
					if json.Unmarshal(obj["AllowableValues"], &vs) == nil {
						allowed = vs
					}
				}
				return text, kind, allowed
			}
		}
	}
	text, kind = biosScalar(raw)
	return text, kind, nil
}

// biosScalar reads a JSON value as canonical text: a string, number or
// boolean as such, null as kind "", anything else as compact JSON.
func biosScalar(raw json.RawMessage) (text, kind string) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", ""
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, kindString
		}
	case string(raw) == "true" || string(raw) == "false":
		return string(raw), kindBool
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			if i, err := n.Int64(); err == nil {
				return strconv.FormatInt(i, 10), kindNumber
			}
			return n.String(), kindNumber
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw), kindJSON
	}
	return b.String(), kindJSON
}

// jsonKindOf names the kind of a JSON value, for a message.
func jsonKindOf(raw []byte) string {
	switch raw = bytes.TrimSpace(raw); {
	case len(raw) == 0:
		return "empty"
	case raw[0] == '[':
		return "an array"
	case raw[0] == '"':
		return "a string"
	case raw[0] == 't' || raw[0] == 'f':
		return "a boolean"
	case raw[0] == '{':
		return "an invalid object"
	}
	return "a number"
}

// readBIOSResource reads the system's Bios resource: one GET. A system
// without one, or whose Bios has no attributes (OpenBMC without a BIOS
// configuration provider), fails with an error wrapping
// bmc.ErrNotSupported.
func (d *Driver) readBIOSResource(ctx context.Context) (biosResource, error) {
	// The link, read when the driver selected the system, does not change.
	uri, ok := d.sys.Sub[subBios]
	if !ok {
		return biosResource{}, fmt.Errorf("the system %s links no Bios resource: %w", d.systemURI, bmc.ErrNotSupported)
	}
	if err := checkLink("Bios", uri); err != nil {
		return biosResource{}, err
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		if isNotFound(err) {
			return biosResource{}, fmt.Errorf("the system's Bios %s is missing (404): %w", uri, bmc.ErrNotSupported)
		}
		return biosResource{}, fmt.Errorf("read Bios: %w", err)
	}
	cur, err := decodeBIOS(raw)
	if err != nil {
		return biosResource{}, bmc.Permanent(fmt.Errorf("GET %s: %w", uri, err))
	}
	if cur.members == 0 {
		return biosResource{}, fmt.Errorf("the system's Bios %s has no attributes (none to read or set): %w", uri, bmc.ErrNotSupported)
	}
	return cur, nil
}

// readBIOS reads the Bios resource and, when it has one, its settings
// object: two GETs.
func (d *Driver) readBIOS(ctx context.Context) (cur, settings biosResource, err error) {
	if cur, err = d.readBIOSResource(ctx); err != nil {
		return cur, settings, err
	}
	raw, ok, err := d.readSettingsObject(ctx, "Bios", cur.settings)
	if err != nil || !ok {
		// No settings object: a PATCH goes to the Bios resource itself and
		// applies at once; nothing is pending.
		return cur, biosResource{attrs: bmc.BIOSAttributes{}}, err
	}
	if settings, err = decodeBIOS(raw); err != nil {
		return cur, settings, invalidAt(cur.settings.object, err)
	}
	return cur, settings, nil
}

// maxLink bounds, in bytes, a link the BIOS code follows (the Bios, its
// settings object, a registry file and its Location), so that messages
// naming it stay bounded.
const maxLink = 512

// usableLink reports whether uri is at most maxLink bytes of printable
// text. Another would make messages that name it long or multi-line, and
// no BMC serves one.
func usableLink(uri string) bool {
	return len(uri) <= maxLink && !strings.ContainsFunc(uri, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) })
}

// checkLink refuses a link that is not usableLink, naming it (what) and
// quoting it cut.
func checkLink(what, uri string) error {
	if usableLink(uri) {
		return nil
	}
	return bmc.Permanent(fmt.Errorf("the %s link %s is not a usable URI (longer than %d bytes, or not printable)", what, quoteClip(uri), maxLink))
}

// maxQuoted bounds, in bytes, a vendor's text that a message quotes.
const maxQuoted = bmc.MaxQuoted

// quoteClip quotes s in one bounded line (bmc.QuoteBounded).
func quoteClip(s string) string { return bmc.QuoteBounded(s) }

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
// from them. Two GETs (one without a settings object). A value that is an
// object with a scalar current_value (HPE Cray EX) reads as that value; any
// other object or array as its compact JSON text; no value fails the read.
// A system without a Bios resource, or whose Bios has no attributes
// (OpenBMC), fails with an error wrapping [bmc.ErrNotSupported].
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
// (the Bios, the registry file, the registry), none after. A BMC that does
// not serve it (the Bios names none, the service has no Registries, none
// of them matches, the file has no Location on the BMC, or the Location
// answers 404) gets a registry made from the current attributes: their
// names and JSON types (an Enumeration where the value is an object that
// lists AllowableValues, as on HPE Cray EX), so unknown attributes and
// wrong types are still refused; an attribute whose value is structured
// (kept as JSON text) has no type there and cannot be set. A system without
// a Bios, or whose Bios has no attributes, fails with an error wrapping
// [bmc.ErrNotSupported].
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
	cur, err := d.readBIOSResource(ctx)
	if err != nil {
		return nil, err
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
	if !usableLink(base + "/" + name) {
		// Not a name a BMC serves a file under: as if it served none.
		d.logger(ctx).V(1).Info("the BIOS attribute registry's name is not usable in a URI", "registry", quoteClip(name))
		return nil, nil
	}
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
			if !usableLink(u) {
				continue // not a link the BMC serves: not the one
			}
			raw = nil
			if _, err := d.getJSON(ctx, u, &raw); err != nil {
				if isNotFound(err) {
					continue // listed, not served: not the one
				}
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
		return nil, fmt.Errorf("read registry file %s/%s: %w", base, name, err)
	}
	if file.uri == "" {
		return nil, nil // published elsewhere only (PublicationUri): not on the BMC
	}
	raw = nil
	if !usableLink(file.uri) {
		return nil, nil // not a Location the BMC serves
	}
	if _, err := d.getJSON(ctx, file.uri, &raw); err != nil {
		if isNotFound(err) {
			// The file names a Location the BMC does not serve: as if it
			// served no registry (the caller falls back).
			d.logger(ctx).V(1).Info("the BIOS attribute registry's Location answers 404", "registry", name, "uri", file.uri)
			return nil, nil
		}
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
// current attributes, typed by their JSON kind (a string with
// AllowableValues is an Enumeration of them); a structured value
// (kindJSON) gets no type, so it cannot be set.
func registryFromAttributes(cur biosResource) *bmc.BIOSRegistry {
	reg := &bmc.BIOSRegistry{ID: cur.registry}
	for _, k := range slices.Sorted(maps.Keys(cur.attrs)) {
		def := bmc.BIOSAttributeDef{Name: k, Type: kindType(cur.kinds[k])}
		if vs := cur.allowed[k]; def.Type == bmc.BIOSString && len(vs) > 0 {
			def.Type, def.Values = bmc.BIOSEnumeration, slices.Clone(vs)
		}
		reg.Attributes = append(reg.Attributes, def)
	}
	return reg
}

// kindType is the registry type of a value of JSON kind k; "" (unknown)
// for a structured value.
func kindType(k string) bmc.BIOSAttributeType {
	switch k {
	case kindNumber:
		return bmc.BIOSInteger
	case kindBool:
		return bmc.BIOSBoolean
	case kindString:
		return bmc.BIOSString
	}
	return ""
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
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[k]
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
		body := cur.settings.withApplyTime(map[string]any{"Attributes": send})
		target := cur.settings.target(d.sysBIOSURI())
		d.logger(ctx).V(1).Info("setting BIOS attributes", "uri", target, "attributes", slices.Sorted(maps.Keys(send)))
		if err := d.patch(ctx, target, body, ""); err != nil {
			return bmc.BIOSApply{}, fmt.Errorf("PATCH %s: %w", target, err)
		}
		if cur, settings, err = d.readBIOS(ctx); err != nil {
			return bmc.BIOSApply{}, fmt.Errorf("read back after the PATCH: %w", err)
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
				return res, bmc.Permanent(fmt.Errorf("the BMC applied %s=%s but still holds %s pending for it", k, quoteClip(v), quoteClip(pending[k])))
			}
		default:
			return res, bmc.Permanent(fmt.Errorf("the BMC answered the PATCH but dropped %s=%s: it reads %s and %s pending", k, quoteClip(v), quoteClip(cur.attrs[k]), quoteClip(pending[k])))
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
// else the current value's kind. An attribute of no known type (a
// structured value the registry does not type) is refused.
func biosJSON(reg *bmc.BIOSRegistry, cur biosResource, k, v string) (any, error) {
	var t bmc.BIOSAttributeType
	if def, ok := reg.Lookup(k); ok {
		t = def.Type
	} else {
		t = kindType(cur.kinds[k])
	}
	switch t {
	case "":
		return nil, &bmc.BIOSAttributeError{Attribute: k, Value: v, Reason: "no type is known for it (a structured value no attribute registry types, or a registry entry without a Type), so it cannot be set"}
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
