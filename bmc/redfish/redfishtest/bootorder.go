package redfishtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The system's persistent boot order: Boot.BootOrder of BootOptionReferences
// and the Boot.BootOptions collection (four options per system: PXE on the
// first NIC, its MAC in the UEFI device path as HPE iLO 5 prints it, a
// disk, UEFI HTTP on the same NIC, a CD), with BootOptionEnabled writable
// on each. Config.BootOrder picks when a change of the order (and of
// Boot.HttpBootUri through the settings object) applies.

// BootOrderApply selects how the simulated BMC applies a boot order change.
type BootOrderApply int

// Boot order behaviours.
const (
	// BootOrderImmediate: PATCH the system's Boot.BootOrder applies at
	// once (DMTF, OpenBMC).
	BootOrderImmediate BootOrderApply = iota
	// BootOrderOnReset: the system has @Redfish.Settings (OnReset)
	// pointing to Systems/{id}/Settings, which takes Boot.BootOrder and
	// Boot.HttpBootUri and holds them until the next boot (Dell iDRAC);
	// Boot.BootOrder PATCHed on the system itself is refused (400).
	BootOrderOnReset
	// BootOrderNone: the system's Boot has no BootOrder and no
	// BootOptions.
	BootOrderNone
)

type simBootOption struct {
	ref, name, alias, path string
	enabled                bool
}

// bootOrderSystem is one system's boot order. Guarded by Server.mu.
type bootOrderSystem struct {
	order     []string
	options   []*simBootOption
	heldOrder []string // BootOrderOnReset: what the settings object holds
	heldURI   *string
}

// bootOrderOf returns sys's boot order state. Called with s.mu held.
func (s *Server) bootOrderOf(sys *system) *bootOrderSystem {
	if s.bootOrders == nil {
		s.bootOrders = map[string]*bootOrderSystem{}
	}
	b := s.bootOrders[sys.id]
	if b == nil {
		mac := strings.ReplaceAll(SystemMAC(sysNum(sys), 1), ":", "")
		nic := "PciRoot(0x4)/Pci(0x4,0x0)/Pci(0x0,0x0)/MAC(" + mac + ",0x1)/IPv4(0.0.0.0)"
		b = &bootOrderSystem{options: []*simBootOption{
			{ref: "Boot0001", name: "UEFI PXEv4 (MAC:" + mac + ")", alias: "Pxe", path: nic, enabled: true},
			{ref: "Boot0002", name: "UEFI NVMe Drive 1", alias: "Hdd", path: "PciRoot(0x2)/Pci(0x4,0x0)/Pci(0x0,0x0)/NVMe(0x1,01-00-00-0A-0A-43-50-00)", enabled: true},
			{ref: "Boot0003", name: "UEFI HTTPv4 (MAC:" + mac + ")", alias: "UefiHttp", path: nic + "/Uri()", enabled: true},
			{ref: "Boot0004", name: "UEFI Virtual CD", alias: "Cd", path: "UsbClass(0xFFFF,0xFFFF,0xFF,0xFF,0xFF)", enabled: false},
		}}
		for _, o := range b.options {
			b.order = append(b.order, o.ref)
		}
		s.bootOrders[sys.id] = b
	}
	return b
}

// bootOrderBooted applies what the settings object holds. Called with s.mu
// held.
func (s *Server) bootOrderBooted(sys *system) {
	b := s.bootOrders[sys.id]
	if b == nil {
		return
	}
	if b.heldOrder != nil {
		b.order, b.heldOrder = b.heldOrder, nil
	}
	if b.heldURI != nil {
		sys.httpBootURI, b.heldURI = *b.heldURI, nil
	}
}

// BootOrder returns a system's boot order as the simulator holds it, and
// what its settings object holds for the next boot (nil: nothing).
func (s *Server) BootOrder(systemID string) (order, held []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := s.system(systemID)
	if sys == nil {
		return nil, nil
	}
	s.settle(sys)
	b := s.bootOrderOf(sys)
	return slices.Clone(b.order), slices.Clone(b.heldOrder)
}

func (s *Server) bootOrderRoutes(handle func(method, path string, h http.HandlerFunc)) {
	if s.cfg.BootOrder == BootOrderNone {
		return
	}
	sysURI := root + "/Systems/{id}"
	handle("GET", sysURI+"/BootOptions", s.auth(s.listBootOptions))
	handle("GET", sysURI+"/BootOptions/{opt}", s.auth(s.getBootOption))
	handle("PATCH", sysURI+"/BootOptions/{opt}", s.auth(s.patchBootOption))
	if s.cfg.BootOrder == BootOrderOnReset {
		handle("GET", sysURI+"/Settings", s.auth(s.getSystemSettings))
		handle("PATCH", sysURI+"/Settings", s.auth(s.patchSystemSettings))
	}
}

// bootOrderDoc adds BootOrder and BootOptions to a system's Boot, and
// @Redfish.Settings to the system under BootOrderOnReset. Called with s.mu
// held.
func (s *Server) bootOrderDoc(sys *system, doc, boot map[string]any, uri string) {
	if s.cfg.BootOrder == BootOrderNone {
		return
	}
	boot["BootOrder"] = slices.Clone(s.bootOrderOf(sys).order)
	boot["BootOptions"] = link(uri + "/BootOptions")
	if s.cfg.BootOrder == BootOrderOnReset {
		doc["@Redfish.Settings"] = map[string]any{"@odata.type": "#Settings.v1_3_5.Settings",
			"SettingsObject": link(uri + "/Settings"), "SupportedApplyTimes": []string{"OnReset"}}
	}
}

// checkOrder is the refusal of order, or "": a permutation of the options.
func (b *bootOrderSystem) checkOrder(order []string) string {
	if len(order) != len(b.options) {
		return fmt.Sprintf("BootOrder must list each of the %d boot options once", len(b.options))
	}
	for _, o := range b.options {
		if !slices.Contains(order, o.ref) {
			return "BootOrder must list each boot option once; " + o.ref + " is missing"
		}
	}
	return ""
}

// takeBootOrder handles Boot.BootOrder in a PATCH of the system: it removes
// it from boot and returns what applies it once the rest of the PATCH is
// accepted, or the refusal. Called with s.mu held.
func (s *Server) takeBootOrder(sys *system, boot map[string]json.RawMessage) (apply func(), code, msg string) {
	raw, ok := boot["BootOrder"]
	if !ok {
		return func() {}, "", ""
	}
	delete(boot, "BootOrder")
	switch s.cfg.BootOrder {
	case BootOrderNone:
		return nil, "Base.1.8.PropertyUnknown", "property Boot/BootOrder is not known"
	case BootOrderOnReset:
		return nil, "Base.1.8.PropertyNotWritable", "Boot/BootOrder is set through the settings object " + root + "/Systems/" + sys.id + "/Settings"
	}
	var order []string
	if json.Unmarshal(raw, &order) != nil {
		return nil, "Base.1.8.PropertyValueTypeError", "Boot/BootOrder must be an array of strings"
	}
	b := s.bootOrderOf(sys)
	if m := b.checkOrder(order); m != "" {
		return nil, "Base.1.8.PropertyValueNotInList", m
	}
	return func() { b.order = order }, "", ""
}

func (s *Server) listBootOptions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := s.lookup(w, r)
	if sys == nil {
		return
	}
	var members []any
	for _, o := range s.bootOrderOf(sys).options {
		members = append(members, link(root+"/Systems/"+sys.id+"/BootOptions/"+o.ref))
	}
	writeCollection(w, root+"/Systems/"+sys.id+"/BootOptions", "BootOptionCollection", "Boot Options", members)
}

// bootOption finds the option the request names, answering 404 when none.
// Called with s.mu held.
func (s *Server) bootOption(w http.ResponseWriter, r *http.Request) (*system, *simBootOption) {
	sys := s.lookup(w, r)
	if sys == nil {
		return nil, nil
	}
	for _, o := range s.bootOrderOf(sys).options {
		if o.ref == r.PathValue("opt") {
			return sys, o
		}
	}
	redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no boot option "+r.PathValue("opt"))
	return nil, nil
}

func (s *Server) getBootOption(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys, o := s.bootOption(w, r)
	if o == nil {
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": root + "/Systems/" + sys.id + "/BootOptions/" + o.ref, "@odata.type": "#BootOption.v1_0_4.BootOption",
		"Id": o.ref, "Name": "Boot Option", "BootOptionReference": o.ref, "DisplayName": o.name, "Alias": o.alias,
		"BootOptionEnabled": o.enabled, "UefiDevicePath": o.path,
	})
}

// patchBootOption takes {"BootOptionEnabled": bool}, applied at once.
func (s *Server) patchBootOption(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys, o := s.bootOption(w, r)
	if o == nil {
		return
	}
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	var v *bool
	for k, raw := range body {
		if k != "BootOptionEnabled" {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "property "+k+" is not writable")
			return
		}
		if json.Unmarshal(raw, &v) != nil || v == nil {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "BootOptionEnabled must be a boolean")
			return
		}
	}
	if v == nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyMissing", "BootOptionEnabled is required")
		return
	}
	o.enabled = *v
	s.stateChanged(r, sys.id, "bootoption:"+o.ref+"="+onOff(*v))
	w.WriteHeader(http.StatusNoContent)
}

// getSystemSettings serves the system's settings object (BootOrderOnReset):
// its Boot as the next boot will have it.
func (s *Server) getSystemSettings(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	b := s.bootOrderOf(sys)
	order, uri := b.order, sys.httpBootURI
	if b.heldOrder != nil {
		order = b.heldOrder
	}
	if b.heldURI != nil {
		uri = *b.heldURI
	}
	boot := map[string]any{"BootOrder": slices.Clone(order)}
	if !s.cfg.NoHTTPBootURI {
		boot["HttpBootUri"] = uri
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": root + "/Systems/" + sys.id + "/Settings", "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
		"Id": "Settings", "Name": "System Pending Settings", "Boot": boot,
	})
}

// patchSystemSettings takes {"Boot": {"BootOrder": [...], "HttpBootUri":
// "..."}} and @Redfish.SettingsApplyTime OnReset, and holds them until the
// next boot.
func (s *Server) patchSystemSettings(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	var boot struct {
		BootOrder   []string
		HTTPBootURI *string `json:"HttpBootUri"`
	}
	for k, raw := range body {
		switch k {
		case "Boot":
			var props map[string]json.RawMessage
			if json.Unmarshal(raw, &props) != nil || json.Unmarshal(raw, &boot) != nil {
				redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "Boot: BootOrder must be an array of strings, HttpBootUri a string")
				return
			}
			for p := range props {
				if p != "BootOrder" && (p != "HttpBootUri" || s.cfg.NoHTTPBootURI) {
					redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "property Boot/"+p+" is not writable here")
					return
				}
			}
		case "@Redfish.SettingsApplyTime":
			var at struct{ ApplyTime string }
			if json.Unmarshal(raw, &at) != nil || at.ApplyTime != "OnReset" {
				redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "@Redfish.SettingsApplyTime: only OnReset is supported")
				return
			}
		default:
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "property "+k+" is not writable")
			return
		}
	}
	b := s.bootOrderOf(sys)
	if boot.BootOrder != nil {
		if m := b.checkOrder(boot.BootOrder); m != "" {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", m)
			return
		}
		b.heldOrder = boot.BootOrder
	}
	if boot.HTTPBootURI != nil {
		b.heldURI = boot.HTTPBootURI
	}
	s.stateChanged(r, sys.id, "bootorder:held")
	w.WriteHeader(http.StatusNoContent)
}
