package redfishtest

import (
	"encoding/json"
	"net/http"
	"slices"
)

// The system's UEFI Secure Boot: Systems/{id}/SecureBoot, in the shape of
// the DMTF mockup (public-rackmount1/Systems/437XR1138R2/SecureBoot:
// SecureBootEnable, SecureBootCurrentBoot, SecureBootMode and
// #SecureBoot.ResetKeys with its three AllowableValues). Config.SecureBoot
// picks when a change applies. Keys behave as UEFI says: deleting them
// (DeleteAllKeys, DeletePK) enters SetupMode, ResetAllKeysToDefault leaves
// it, and in SetupMode a boot runs without Secure Boot whatever the
// setting.

// SecureBootApply selects how the simulated BMC applies a Secure Boot
// change.
type SecureBootApply int

// Secure Boot behaviours.
const (
	// SecureBootNextBoot: PATCH SecureBoot changes SecureBootEnable at
	// once; SecureBootCurrentBoot follows at the next boot (DMTF, HPE iLO,
	// sushy-tools).
	SecureBootNextBoot SecureBootApply = iota
	// SecureBootSettingsObject: SecureBoot has @Redfish.Settings
	// (SupportedApplyTimes OnReset) pointing to SecureBoot/Settings, which
	// takes the PATCH and holds it until the next boot (Dell iDRAC's
	// shape for settings applied at a reset); PATCH SecureBoot is 405.
	SecureBootSettingsObject
	// SecureBootImmediate: a PATCH applies at once, the current boot's
	// state included.
	SecureBootImmediate
	// SecureBootNone: the system links no SecureBoot.
	SecureBootNone
)

// secureBootSystem is one system's Secure Boot. Guarded by Server.mu.
type secureBootSystem struct {
	enable, current bool
	mode            string
	held            *bool // SecureBootSettingsObject: the value the settings object holds
}

var secureBootResets = []string{"ResetAllKeysToDefault", "DeleteAllKeys", "DeletePK"}

// secureBootOf returns sys's Secure Boot (the DMTF mockup's start: off,
// UserMode). Called with s.mu held.
func (s *Server) secureBootOf(sys *system) *secureBootSystem {
	if s.secureBoot == nil {
		s.secureBoot = map[string]*secureBootSystem{}
	}
	sb := s.secureBoot[sys.id]
	if sb == nil {
		sb = &secureBootSystem{mode: "UserMode"}
		s.secureBoot[sys.id] = sb
	}
	return sb
}

// secureBootBooted applies sys's held change and sets what the boot runs
// with. Called with s.mu held.
func (s *Server) secureBootBooted(sys *system) {
	sb := s.secureBoot[sys.id]
	if sb == nil {
		return
	}
	if sb.held != nil {
		sb.enable, sb.held = *sb.held, nil
	}
	sb.current = sb.enable && sb.mode != "SetupMode"
}

// SecureBoot returns a system's Secure Boot as the simulator holds it: the
// setting, whether the current boot runs with it, the mode, and the value
// a settings object holds (nil: none).
func (s *Server) SecureBoot(systemID string) (enabled, current bool, mode string, held *bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := s.system(systemID)
	if sys == nil {
		return false, false, "", nil
	}
	s.settle(sys)
	sb := s.secureBootOf(sys)
	if sb.held != nil {
		v := *sb.held
		held = &v
	}
	return sb.enable, sb.current, sb.mode, held
}

func (s *Server) secureBootRoutes(handle func(method, path string, h http.HandlerFunc)) {
	if s.cfg.SecureBoot == SecureBootNone {
		return
	}
	uri := root + "/Systems/{id}/SecureBoot"
	handle("GET", uri, s.auth(s.getSecureBoot))
	handle("POST", uri+"/Actions/SecureBoot.ResetKeys", s.auth(s.resetSecureBootKeys))
	if s.cfg.SecureBoot == SecureBootSettingsObject {
		handle("GET", uri+"/Settings", s.auth(s.getSecureBootSettings))
		handle("PATCH", uri+"/Settings", s.auth(s.patchSecureBoot))
	} else {
		handle("PATCH", uri, s.auth(s.patchSecureBoot))
	}
}

// secureBootLink adds SecureBoot to a system document.
func (s *Server) secureBootLink(doc map[string]any, uri string) {
	if s.cfg.SecureBoot != SecureBootNone {
		doc["SecureBoot"] = link(uri + "/SecureBoot")
	}
}

func onOff(b bool) string {
	if b {
		return "Enabled"
	}
	return "Disabled"
}

func (s *Server) getSecureBoot(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	sb := s.secureBootOf(sys)
	uri := root + "/Systems/" + sys.id + "/SecureBoot"
	doc := map[string]any{
		"@odata.id": uri, "@odata.type": "#SecureBoot.v1_1_0.SecureBoot", "Id": "SecureBoot", "Name": "UEFI Secure Boot",
		"Actions": map[string]any{"#SecureBoot.ResetKeys": map[string]any{
			"target": uri + "/Actions/SecureBoot.ResetKeys", "ResetKeysType@Redfish.AllowableValues": secureBootResets}},
		"SecureBootEnable": sb.enable, "SecureBootCurrentBoot": onOff(sb.current), "SecureBootMode": sb.mode,
	}
	if s.cfg.SecureBoot == SecureBootSettingsObject {
		doc["@Redfish.Settings"] = map[string]any{"@odata.type": "#Settings.v1_3_5.Settings",
			"SettingsObject": link(uri + "/Settings"), "SupportedApplyTimes": []string{"OnReset"}}
	}
	writeJSON(w, http.StatusOK, "", doc)
}

// getSecureBootSettings serves the settings object: the held value, else a
// copy of the current setting.
func (s *Server) getSecureBootSettings(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	sb := s.secureBootOf(sys)
	v := sb.enable
	if sb.held != nil {
		v = *sb.held
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": root + "/Systems/" + sys.id + "/SecureBoot/Settings", "@odata.type": "#SecureBoot.v1_1_0.SecureBoot",
		"Id": "Settings", "Name": "UEFI Secure Boot Pending Settings", "SecureBootEnable": v,
	})
}

// patchSecureBoot takes {"SecureBootEnable": bool} (and, on the settings
// object, @Redfish.SettingsApplyTime OnReset).
func (s *Server) patchSecureBoot(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	var body map[string]json.RawMessage
	if !decodeBody(w, r, &body) {
		return
	}
	var v *bool
	for k, raw := range body {
		switch {
		case k == "SecureBootEnable":
			if json.Unmarshal(raw, &v) != nil || v == nil {
				redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "SecureBootEnable must be a boolean")
				return
			}
		case k == "@Redfish.SettingsApplyTime" && s.cfg.SecureBoot == SecureBootSettingsObject:
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
	if v == nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyMissing", "SecureBootEnable is required")
		return
	}
	sb := s.secureBootOf(sys)
	switch s.cfg.SecureBoot {
	case SecureBootSettingsObject:
		sb.held = v
	case SecureBootImmediate:
		sb.enable = *v
		sb.current = sb.enable && sb.mode != "SetupMode"
	default:
		sb.enable = *v
	}
	s.stateChanged(r, sys.id, "secureboot:"+onOff(*v))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) resetSecureBootKeys(w http.ResponseWriter, r *http.Request) {
	sys, ok := s.lockSystem(w, r)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	var body struct{ ResetKeysType string }
	if !decodeBody(w, r, &body) {
		return
	}
	if !slices.Contains(secureBootResets, body.ResetKeysType) {
		redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList", "ResetKeysType "+body.ResetKeysType+" is not supported")
		return
	}
	sb := s.secureBootOf(sys)
	if body.ResetKeysType == "ResetAllKeysToDefault" {
		sb.mode = "UserMode"
	} else {
		sb.mode = "SetupMode"
	}
	s.stateChanged(r, sys.id, "secureboot:"+body.ResetKeysType)
	w.WriteHeader(http.StatusNoContent)
}
