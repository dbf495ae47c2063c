package redfishtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The system's BIOS: Systems/{id}/Bios with its current Attributes and,
// unless Config.BIOS says otherwise, @Redfish.Settings pointing to
// Systems/{id}/Bios/Settings, where a PATCH holds attributes pending until
// the system next boots (a power on from off, a restart, a cycle: when the
// power change lands). The attribute registry is served under
// /redfish/v1/Registries like a BMC's: a MessageRegistryFile whose Location
// links the AttributeRegistry document (404 with
// Config.BIOSRegistryNotFound). Config.BIOSObjectValues serves the values
// as HPE Cray EX does (objects with a current_value, and structured ones).

// BIOSMode selects how the simulated BMC applies BIOS settings.
type BIOSMode int

// BIOS modes.
const (
	// BIOSOnReset: Bios has @Redfish.Settings (SupportedApplyTimes
	// OnReset); PATCH Bios/Settings holds the attributes pending until the
	// next boot; GET Bios/Settings shows only what was requested (Dell's
	// shape). PATCH Bios itself is 405.
	BIOSOnReset BIOSMode = iota
	// BIOSFullSettingsCopy is BIOSOnReset whose settings object shows every
	// attribute, the pending ones with their new value (HPE iLO's shape),
	// and lists no SupportedApplyTimes.
	BIOSFullSettingsCopy
	// BIOSImmediate: Bios has no @Redfish.Settings; PATCH Bios applies at
	// once.
	BIOSImmediate
	// BIOSNone: the system links no Bios (404).
	BIOSNone
	// BIOSNoAttributes: the system links a Bios that has no Attributes,
	// names no AttributeRegistry and has no @Redfish.Settings (OpenBMC
	// without a BIOS configuration provider); PATCH Bios is 405, and the
	// Registries collection lists no BIOS attribute registry.
	BIOSNoAttributes
)

const (
	biosRegistryID  = "BiosAttributeRegistry.v1_0_0"
	registriesURI   = root + "/Registries"
	biosRegistryURI = registriesURI + "/" + biosRegistryID
	biosRegistryDoc = biosRegistryURI + "/" + biosRegistryID + ".json"
)

// biosAttr is one attribute of the registry.
type biosAttr struct {
	name, typ    string
	readOnly     bool
	values       []string
	lower, upper int64 // Integer bounds
	maxLen       int   // String; 0: no limit
	initial      any   // the value every system starts with (nil for passwords)
}

var biosAttrs = []biosAttr{
	{name: "BootMode", typ: "Enumeration", values: []string{"Uefi", "Bios"}, initial: "Uefi"},
	{name: "ProcVirtualization", typ: "Enumeration", values: []string{"Enabled", "Disabled"}, initial: "Enabled"},
	{name: "SriovEnable", typ: "Boolean", initial: false},
	{name: "PxeRetryCount", typ: "Integer", lower: 0, upper: 10, initial: int64(3)},
	{name: "AssetTag", typ: "String", maxLen: 32, initial: ""},
	{name: "SystemModelName", typ: "String", readOnly: true, initial: "redfishtest"},
	{name: "AdminPassword", typ: "Password"},
}

// biosStructured are the attributes whose values are structures, served
// with Config.BIOSObjectValues as HPE Cray EX does: an array, and an
// object without a current_value. They cannot be set (400).
var biosStructured = map[string]any{
	"BootOrder":      []any{"Pxe", "Hdd", "Cd"},
	"MemoryTopology": map[string]any{"Channels": 8, "Interleave": "Auto"},
}

// biosObjectValue is attribute a's value v as HPE Cray EX serves it:
// {"current_value": v}, with AllowableValues for an Enumeration.
func biosObjectValue(a *biosAttr, v any) map[string]any {
	o := map[string]any{"current_value": v}
	if a.typ == "Enumeration" {
		o["AllowableValues"] = a.values
	}
	return o
}

// biosDocAttrs renders attrs for a Bios document: as they are, or in
// Cray EX's object shape with its structured attributes (withStructured)
// under Config.BIOSObjectValues.
func (s *Server) biosDocAttrs(attrs map[string]any, withStructured bool) map[string]any {
	if !s.cfg.BIOSObjectValues {
		return maps.Clone(attrs)
	}
	out := map[string]any{}
	for name, v := range attrs {
		if a := findBIOSAttr(name); a != nil {
			out[name] = biosObjectValue(a, v)
		}
	}
	if withStructured {
		maps.Copy(out, biosStructured)
	}
	return out
}

func findBIOSAttr(name string) *biosAttr {
	for i := range biosAttrs {
		if biosAttrs[i].name == name {
			return &biosAttrs[i]
		}
	}
	return nil
}

// biosSystem is one system's BIOS state. Guarded by Server.mu.
type biosSystem struct {
	current, pending map[string]any
}

// biosOf returns sys's BIOS state. Called with s.mu held.
func (s *Server) biosOf(sys *system) *biosSystem {
	if s.bios == nil {
		s.bios = map[string]*biosSystem{}
	}
	b := s.bios[sys.id]
	if b == nil {
		b = &biosSystem{current: map[string]any{}, pending: map[string]any{}}
		for _, a := range biosAttrs {
			b.current[a.name] = a.initial
		}
		s.bios[sys.id] = b
	}
	return b
}

// biosBooted applies sys's pending BIOS settings: it booted. Called with
// s.mu held.
func (s *Server) biosBooted(sys *system) {
	if b := s.bios[sys.id]; b != nil && len(b.pending) > 0 {
		maps.Copy(b.current, b.pending)
		clear(b.pending)
	}
}

// BIOSAttributes returns a copy of a system's current BIOS attributes and
// of those pending for its next boot (strings, int64, bool; nil for the
// password).
func (s *Server) BIOSAttributes(systemID string) (current, pending map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := s.system(systemID)
	if sys == nil {
		return nil, nil
	}
	s.settle(sys)
	b := s.biosOf(sys)
	return maps.Clone(b.current), maps.Clone(b.pending)
}

func (s *Server) biosRoutes(handle func(method, path string, h http.HandlerFunc)) {
	if s.cfg.BIOS == BIOSNone {
		return
	}
	bios := root + "/Systems/{id}/Bios"
	handle("GET", bios, s.auth(s.getBIOS))
	if s.cfg.BIOS == BIOSNoAttributes {
		handle("GET", registriesURI, s.auth(s.listRegistries))
		return
	}
	if s.cfg.BIOS == BIOSImmediate {
		handle("PATCH", bios, s.auth(s.patchBIOS))
	} else {
		handle("GET", bios+"/Settings", s.auth(s.getBIOSSettings))
		handle("PATCH", bios+"/Settings", s.auth(s.patchBIOS))
	}
	handle("GET", registriesURI, s.auth(s.listRegistries))
	handle("GET", biosRegistryURI, s.auth(s.getRegistryFile))
	if s.cfg.BIOSRegistryNotFound {
		handle("GET", biosRegistryDoc, s.auth(func(w http.ResponseWriter, r *http.Request) {
			redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no resource at "+r.URL.Path)
		}))
	} else {
		handle("GET", biosRegistryDoc, s.auth(s.getBIOSRegistry))
	}
}

// biosLinks adds Bios to a system document, and Registries to the service
// root (sys nil).
func (s *Server) biosLinks(doc map[string]any, uri string) {
	if s.cfg.BIOS == BIOSNone {
		return
	}
	if uri == "" {
		doc["Registries"] = link(registriesURI)
		return
	}
	doc["Bios"] = link(uri + "/Bios")
}

func (s *Server) getBIOS(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	b := s.biosOf(sys)
	uri := root + "/Systems/" + sys.id + "/Bios"
	if s.cfg.BIOS == BIOSNoAttributes {
		// bmcweb's Bios without a BIOS configuration provider.
		writeJSON(w, http.StatusOK, "", map[string]any{
			"@odata.id": uri, "@odata.type": "#Bios.v1_1_0.Bios", "Id": "BIOS", "Name": "BIOS Configuration",
			"Description": "BIOS Configuration Service",
			"Actions":     map[string]any{"#Bios.ResetBios": map[string]any{"target": uri + "/Actions/Bios.ResetBios"}},
		})
		return
	}
	doc := map[string]any{
		"@odata.id": uri, "@odata.type": "#Bios.v1_2_1.Bios", "Id": "Bios", "Name": "BIOS Configuration Current Settings",
		"AttributeRegistry": biosRegistryID, "Attributes": s.biosDocAttrs(b.current, true),
	}
	if s.cfg.BIOSObjectValues {
		delete(doc, "AttributeRegistry")
	}
	if s.cfg.BIOS != BIOSImmediate {
		settings := map[string]any{
			"@odata.type":    "#Settings.v1_3_5.Settings",
			"SettingsObject": link(uri + "/Settings"),
		}
		if s.cfg.BIOS == BIOSOnReset {
			settings["SupportedApplyTimes"] = []string{"OnReset"}
		}
		doc["@Redfish.Settings"] = settings
	}
	writeJSON(w, http.StatusOK, "", doc)
}

func (s *Server) getBIOSSettings(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	b := s.biosOf(sys)
	attrs := maps.Clone(b.pending)
	if s.cfg.BIOS == BIOSFullSettingsCopy {
		attrs = maps.Clone(b.current)
		maps.Copy(attrs, b.pending)
	}
	doc := map[string]any{
		"@odata.id": root + "/Systems/" + sys.id + "/Bios/Settings", "@odata.type": "#Bios.v1_2_1.Bios",
		"Id": "Settings", "Name": "BIOS Configuration Pending Settings", "AttributeRegistry": biosRegistryID,
		"Attributes": s.biosDocAttrs(attrs, s.cfg.BIOS == BIOSFullSettingsCopy),
	}
	if s.cfg.BIOSObjectValues {
		delete(doc, "AttributeRegistry")
	}
	writeJSON(w, http.StatusOK, "", doc)
}

// patchBIOS takes {"Attributes": {...}} (and, on the settings object,
// @Redfish.SettingsApplyTime), checks every attribute against the registry
// (400 with the DMTF Base message for the first problem, nothing applied),
// then holds them pending (or applies them, BIOSImmediate).
func (s *Server) patchBIOS(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	for k, v := range body {
		switch k {
		case "Attributes":
		case "@Redfish.SettingsApplyTime":
			var at struct{ ApplyTime string }
			if s.cfg.BIOS == BIOSImmediate || json.Unmarshal(v, &at) != nil || at.ApplyTime != "OnReset" || s.cfg.BIOS != BIOSOnReset {
				redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "@Redfish.SettingsApplyTime: only OnReset is supported")
				return
			}
		default:
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "property "+k+" is not writable")
			return
		}
	}
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(body["Attributes"], &attrs); err != nil || len(attrs) == 0 {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "Attributes must be a non-empty object")
		return
	}
	values := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		v, code, msg := checkBIOSValue(name, attrs[name])
		if code != "" {
			redfishError(w, http.StatusBadRequest, code, msg)
			return
		}
		values[name] = v
	}
	b := s.biosOf(sys)
	target := b.pending
	if s.cfg.BIOS == BIOSImmediate {
		target = b.current
	}
	maps.Copy(target, values)
	s.stateChanged(r, sys.id, "bios:"+strconv.Itoa(len(values)))
	w.WriteHeader(http.StatusNoContent)
}

// checkBIOSValue decodes one requested attribute and checks it against
// the registry; code is the DMTF Base message of a refusal.
func checkBIOSValue(name string, raw json.RawMessage) (v any, code, msg string) {
	if _, ok := biosStructured[name]; ok {
		return nil, "Base.1.8.PropertyNotWritable", "attribute " + name + " cannot be set"
	}
	a := findBIOSAttr(name)
	if a == nil {
		return nil, "Base.1.8.PropertyUnknown", "attribute " + name + " is not in the registry"
	}
	if a.readOnly {
		return nil, "Base.1.8.PropertyNotWritable", "attribute " + name + " is read-only"
	}
	typeErr := func() (any, string, string) {
		return nil, "Base.1.8.PropertyValueTypeError", fmt.Sprintf("attribute %s: the value %s is not of type %s", name, raw, a.typ)
	}
	switch a.typ {
	case "Enumeration":
		var sv string
		if json.Unmarshal(raw, &sv) != nil {
			return typeErr()
		}
		if !slices.Contains(a.values, sv) {
			return nil, "Base.1.8.PropertyValueNotInList", fmt.Sprintf("attribute %s: %q is not allowed", name, sv)
		}
		return sv, "", ""
	case "Boolean":
		var bv bool
		if json.Unmarshal(raw, &bv) != nil {
			return typeErr()
		}
		return bv, "", ""
	case "Integer":
		var iv int64
		if json.Unmarshal(raw, &iv) != nil {
			return typeErr()
		}
		if iv < a.lower || iv > a.upper {
			return nil, "Base.1.8.PropertyValueOutOfRange", fmt.Sprintf("attribute %s: %d is outside %d..%d", name, iv, a.lower, a.upper)
		}
		return iv, "", ""
	case "String", "Password":
		var sv string
		if json.Unmarshal(raw, &sv) != nil {
			return typeErr()
		}
		if a.maxLen > 0 && utf8.RuneCountInString(sv) > a.maxLen {
			return nil, "Base.1.8.PropertyValueFormatError", fmt.Sprintf("attribute %s: longer than %d characters", name, a.maxLen)
		}
		if a.typ == "Password" {
			return nil, "Base.1.8.PropertyNotWritable", "attribute " + name + " cannot be set here" // never echoed
		}
		return sv, "", ""
	}
	return typeErr()
}

func (s *Server) listRegistries(w http.ResponseWriter, _ *http.Request) {
	members := []any{link(registriesURI + "/Base.1.8.1")}
	if s.cfg.BIOS != BIOSNoAttributes {
		members = append(members, link(biosRegistryURI))
	}
	writeCollection(w, registriesURI, "MessageRegistryFileCollection", "Registry File Collection", members)
}

func (s *Server) getRegistryFile(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": biosRegistryURI, "@odata.type": "#MessageRegistryFile.v1_1_3.MessageRegistryFile",
		"Id": biosRegistryID, "Name": "BIOS Attribute Registry File", "Registry": "BiosAttributeRegistry.1.0",
		"Languages": []string{"en"},
		"Location":  []any{map[string]any{"Language": "en", "Uri": biosRegistryDoc}},
	})
}

func (s *Server) getBIOSRegistry(w http.ResponseWriter, _ *http.Request) {
	var attrs []any
	for _, a := range biosAttrs {
		e := map[string]any{
			"AttributeName": a.name, "Type": a.typ, "ReadOnly": a.readOnly, "DisplayName": a.name,
			"ResetRequired": !a.readOnly, "Hidden": false,
		}
		switch a.typ {
		case "Enumeration":
			var vs []any
			for _, v := range a.values {
				vs = append(vs, map[string]string{"ValueName": v, "ValueDisplayName": v})
			}
			e["Value"] = vs
		case "Integer":
			e["LowerBound"], e["UpperBound"], e["ScalarIncrement"] = a.lower, a.upper, 1
		case "String":
			e["MinLength"] = 0
			if a.maxLen > 0 {
				e["MaxLength"] = a.maxLen
			}
		}
		if a.initial != nil {
			e["DefaultValue"] = a.initial
		}
		attrs = append(attrs, e)
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": biosRegistryDoc, "@odata.type": "#AttributeRegistry.v1_3_6.AttributeRegistry",
		"Id": biosRegistryID, "Name": "BIOS Attribute Registry", "Language": "en",
		"RegistryVersion": "1.0.0", "OwningEntity": "redfishtest",
		"SupportedSystems": []any{map[string]any{"ProductName": "redfishtest", "SystemId": "redfishtest"}},
		"RegistryEntries":  map[string]any{"Attributes": attrs},
	})
}
