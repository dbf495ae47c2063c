package redfishtest

import (
	"encoding/json"
	"net/http"
	"slices"
)

// LocatorShape says where a simulated BMC keeps its locator (identify) LED
// and which properties show it (docs/indicator-nmi.md has the sources).
type LocatorShape string

// Locator shapes.
const (
	// LocatorBoth: every system has LocationIndicatorActive and the
	// deprecated IndicatorLED (Lit, Blinking, Off), kept in step, as
	// services do that kept IndicatorLED after ComputerSystem v1_13_0 (a
	// Supermicro X13 Chassis shows both). The default.
	LocatorBoth LocatorShape = ""
	// LocatorActive: LocationIndicatorActive only, as OpenBMC's bmcweb
	// writes it: the LED can be on or off, not blinking.
	LocatorActive LocatorShape = "active"
	// LocatorIndicator: IndicatorLED only, with
	// IndicatorLED@Redfish.AllowableValues Lit and Off, as on iLO 5
	// (ComputerSystem v1_10_0; HPE's python-ilorest-library examples PATCH
	// Lit and Off; the AllowableValues are from memory of HPE's API
	// reference). A PATCH of Blinking is refused (400).
	LocatorIndicator LocatorShape = "indicator"
	// LocatorChassis: the systems have neither property; Chassis/1 has
	// LocationIndicatorActive (the schema lets a system's locator live in
	// its containing Chassis).
	LocatorChassis LocatorShape = "chassis"
	// LocatorNone: no locator anywhere.
	LocatorNone LocatorShape = "none"
)

// locatorRoutes serves PATCH of the chassis (its locator); the system's
// PATCH hands its locator properties to patchLocator.
func (s *Server) locatorRoutes(handle func(method, path string, h http.HandlerFunc)) {
	handle("PATCH", chassisURI, s.auth(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		if !decodeBody(w, r, &body) {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.patchLocator(w, r, chassisURI, "", body) {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "only the chassis' locator is writable")
		}
	}))
}

// locatorProps reports which locator properties the resource at uri has.
func (s *Server) locatorProps(uri string) (active, indicator bool) {
	onChassis := uri == chassisURI
	switch s.cfg.Locator {
	case LocatorBoth:
		return !onChassis, !onChassis
	case LocatorActive:
		return !onChassis, false
	case LocatorIndicator:
		return false, !onChassis
	case LocatorChassis:
		return onChassis, false
	}
	return false, false
}

// ledOf is the state of the LED at uri: "Off", "Lit" or "Blinking".
// Called with s.mu held.
func (s *Server) ledOf(uri string) string {
	if v := s.leds[uri]; v != "" {
		return v
	}
	return "Off"
}

func (s *Server) ledAllowed() []string {
	if s.cfg.Locator == LocatorIndicator {
		return []string{"Lit", "Off"}
	}
	return []string{"Lit", "Blinking", "Off"}
}

// locatorDoc adds the locator properties of the resource at uri to doc.
// Called with s.mu held.
func (s *Server) locatorDoc(doc map[string]any, uri string) {
	active, indicator := s.locatorProps(uri)
	if active {
		doc["LocationIndicatorActive"] = s.ledOf(uri) != "Off"
	}
	if indicator {
		doc["IndicatorLED"] = s.ledOf(uri)
		if s.cfg.Locator == LocatorIndicator {
			doc["IndicatorLED@Redfish.AllowableValues"] = s.ledAllowed()
		}
	}
}

// patchLocator applies a PATCH whose body names a locator property of the
// resource at uri (system: its ID, for the state-change report) and
// answers it; it returns false, answering nothing, when the body names
// none. Called with s.mu held.
func (s *Server) patchLocator(w http.ResponseWriter, r *http.Request, uri, system string, body map[string]json.RawMessage) bool {
	rawActive, hasActive := body["LocationIndicatorActive"]
	rawIndicator, hasIndicator := body["IndicatorLED"]
	if !hasActive && !hasIndicator {
		return false
	}
	if len(body) > 1 {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "the locator is patched alone here")
		return true
	}
	active, indicator := s.locatorProps(uri)
	if hasActive && !active || hasIndicator && !indicator {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyUnknown", "no such locator property at "+uri)
		return true
	}
	next := s.ledOf(uri)
	if hasActive {
		var on bool
		if err := json.Unmarshal(rawActive, &on); err != nil {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "LocationIndicatorActive must be a boolean")
			return true
		}
		switch {
		case !on:
			next = "Off"
		case next == "Off":
			next = "Lit"
		}
	} else {
		var v string
		if err := json.Unmarshal(rawIndicator, &v); err != nil || !slices.Contains(s.ledAllowed(), v) {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "IndicatorLED "+string(rawIndicator)+" is not allowed")
			return true
		}
		next = v
	}
	if s.leds == nil {
		s.leds = map[string]string{}
	}
	s.leds[uri] = next
	if sys := s.system(system); sys != nil {
		sys.etag++
	}
	w.WriteHeader(http.StatusNoContent)
	s.stateChanged(r, system, "locator:"+next)
	return true
}

// LocatorLED returns the state of the locator LED that the system with the
// given ID shows: "Off", "Lit" or "Blinking" (with LocatorChassis, the
// chassis'; with LocatorNone, "Off").
func (s *Server) LocatorLED(systemID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	uri := root + "/Systems/" + systemID
	if s.cfg.Locator == LocatorChassis {
		uri = chassisURI
	}
	return s.ledOf(uri)
}
