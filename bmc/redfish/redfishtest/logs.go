package redfishtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// LogStyle selects the event logs a simulated BMC serves (LogServices of
// each system and of Managers/BMC) and the shape of their entries.
type LogStyle int

// Log styles. Each seeds its logs with entries shaped after its vendor's
// payloads; [Server.AddLogEntry] adds more, [Server.LogEntries] reads
// them back.
const (
	// LogsDMTF: the DMTF mockups' shape. Each system has "SEL"
	// (LogEntryType SEL, entries with EntryCode, SensorType and
	// SensorNumber), Managers/BMC has "Log" (LogEntryType Event); both
	// clearable, entries inline.
	LogsDMTF LogStyle = iota
	// LogsILO5: HPE iLO 5. Each system has "IML" (the Integrated
	// Management Log), Managers/BMC has "IEL" (the iLO Event Log); both
	// clearable. Entry collections list links only (a GET per entry),
	// entries are EntryType Oem with Oem.Hpe (Class, Code, EventNumber,
	// Count, Updated, Categories, Repaired), and Severity is iLO's word:
	// Critical, Caution, Informational, or Repaired for a resolved
	// entry that is not critical.
	LogsILO5
	// LogsOpenBMC: OpenBMC's bmcweb. Each system has "EventLog" (Event
	// entries with OpenBMC registry MessageIds, Resolved), clearable;
	// Managers/BMC has "Journal" (EntryType Oem, OemRecordFormat "BMC
	// Journal Entry", no MessageId), not clearable. Entry collections
	// page with Members@odata.nextLink ($skip) every Config.LogPageSize
	// entries.
	LogsOpenBMC
	// LogsCrayEX: an HPE Cray EX node. Each system has "SEL", clearable,
	// whose entries carry no Created time; the manager has no log.
	LogsCrayEX
	// LogsNone: no LogServices at all.
	LogsNone
)

// simLog is one log of the simulator.
type simLog struct {
	id, name, entryType string
	clearable           bool
	maxRecords          int
	entries             []bmc.LogEntry // in listing order, the oldest first
	oem                 map[string]map[string]any
}

// logEpoch is when the seeded entries were recorded.
var logEpoch = time.Date(2026, 3, 2, 8, 15, 0, 0, time.UTC)

// initLogs seeds the logs of cfg.Logs. Called from start.
func (s *Server) initLogs() {
	s.sysLogs = map[string][]*simLog{}
	at := func(min int) time.Time { return logEpoch.Add(time.Duration(min) * time.Minute) }
	for _, sys := range s.systems {
		switch s.cfg.Logs {
		case LogsDMTF:
			s.sysLogs[sys.id] = []*simLog{{id: "SEL", name: "System Event Log", entryType: "SEL", clearable: true, maxRecords: 1024, entries: []bmc.LogEntry{
				{ID: "1", Created: at(0), Severity: bmc.SeverityOK, Message: "Chassis intrusion sensor restored", MessageID: "Event.1.0.ChassisIntrusionRestored", Type: "SEL"},
				{ID: "2", Created: at(5), Severity: bmc.SeverityWarning, Message: "Temperature threshold exceeded: Inlet at 42 C", MessageID: "Event.1.0.TempAssert", Type: "SEL"},
				{ID: "3", Created: at(9), Severity: bmc.SeverityCritical, Message: "Power supply PS2 input lost", MessageID: "Event.1.0.PowerSupplyFailure", Type: "SEL"},
			}}}
		case LogsILO5:
			s.sysLogs[sys.id] = []*simLog{{id: "IML", name: "Integrated Management Log", entryType: "Oem", clearable: true, maxRecords: 1024, entries: []bmc.LogEntry{
				{ID: "1", Created: at(0), Severity: bmc.SeverityOK, Message: "Firmware flashed (ProLiant System BIOS - U40 v2.68 (07/14/2022))", Type: "Oem"},
				{ID: "2", Created: at(3), Severity: bmc.SeverityWarning, Message: "Power Supply Failure (Power Supply 2, Slot 2)", Type: "Oem"},
				{ID: "3", Created: at(4), Severity: bmc.SeverityOK, Resolved: true, Message: "Power Supply Failure (Power Supply 2, Slot 2) - Repaired", Type: "Oem"},
				{ID: "4", Created: at(8), Severity: bmc.SeverityCritical, Message: "Uncorrectable Memory Error detected by ROM-based memory validation. Action: Replace the failed DIMM. (Processor 1, DIMM 4)", Type: "Oem"},
			}}}
		case LogsOpenBMC:
			s.sysLogs[sys.id] = []*simLog{{id: "EventLog", name: "System Event Log Service", entryType: "Event", clearable: true, maxRecords: 1000, entries: []bmc.LogEntry{
				{ID: "1", Created: at(0), Severity: bmc.SeverityOK, Message: "Host system DC power is on", MessageID: "OpenBMC.0.1.DCPowerOn", Type: "Event"},
				{ID: "2", Created: at(1), Severity: bmc.SeverityWarning, Message: "Sensor CPU0_Temp reading 92 crossed upper warning threshold 90", MessageID: "OpenBMC.0.1.SensorThresholdWarningHighGoingHigh", Type: "Event"},
				{ID: "3", Created: at(2), Severity: bmc.SeverityOK, Resolved: true, Message: "Sensor CPU0_Temp reading 85 crossed under upper warning threshold 90", MessageID: "OpenBMC.0.1.SensorThresholdWarningHighGoingLow", Type: "Event"},
				{ID: "4", Created: at(6), Severity: bmc.SeverityCritical, Message: "PSU1 lost AC input", MessageID: "OpenBMC.0.1.PowerSupplyACLost", Type: "Event"},
				{ID: "5", Created: at(7), Severity: bmc.SeverityOK, Message: "Host system DC power is off", MessageID: "OpenBMC.0.1.DCPowerOff", Type: "Event"},
			}}}
		case LogsCrayEX:
			s.sysLogs[sys.id] = []*simLog{{id: "SEL", name: "SEL Log Service", entryType: "SEL", clearable: true, entries: []bmc.LogEntry{
				{ID: "1", Severity: bmc.SeverityOK, Message: "Node power on", MessageID: "CrayAlerts.1.0.NodePowerOn", Type: "SEL"},
				{ID: "2", Severity: bmc.SeverityWarning, Message: "CPU 0 VR temperature high", MessageID: "CrayAlerts.1.0.VRTempHigh", Type: "SEL"},
			}}}
		}
	}
	switch s.cfg.Logs {
	case LogsDMTF:
		s.mgrLogs = []*simLog{{id: "Log", name: "Manager Log", entryType: "Event", clearable: true, entries: []bmc.LogEntry{
			{ID: "1", Created: at(1), Severity: bmc.SeverityOK, Message: "The BMC was reset", MessageID: "Base.1.8.ResetRequired", Type: "Event"},
		}}}
	case LogsILO5:
		s.mgrLogs = []*simLog{{id: "IEL", name: "iLO Event Log", entryType: "Oem", clearable: true, entries: []bmc.LogEntry{
			{ID: "1", Created: at(2), Severity: bmc.SeverityOK, Message: "Browser login: admin - 10.0.0.5(DNS name not found).", Type: "Oem"},
			{ID: "2", Created: at(6), Severity: bmc.SeverityWarning, Message: "Server power removed.", Type: "Oem"},
		}}}
	case LogsOpenBMC:
		s.mgrLogs = []*simLog{{id: "Journal", name: "Open BMC Journal Entries", entryType: "Oem", entries: []bmc.LogEntry{
			{ID: "1", Created: at(0), Severity: bmc.SeverityOK, Message: "systemd[1]: Started Phosphor Redfish Web Server.", Type: "Oem"},
			{ID: "2", Created: at(3), Severity: bmc.SeverityOK, Message: "bmcweb[412]: Login succeeded for user admin", Type: "Oem"},
		}}}
	}
}

// logsFor returns the logs of a scope ("" systemID: the manager's).
// Called with s.mu held.
func (s *Server) logsFor(systemID string) []*simLog {
	if systemID == "" {
		return s.mgrLogs
	}
	return s.sysLogs[systemID]
}

func (s *Server) findLog(systemID string, ref bmc.LogRef) *simLog {
	if ref.Scope == bmc.LogScopeManager {
		systemID = ""
	}
	for _, l := range s.logsFor(systemID) {
		if l.id == ref.ID {
			return l
		}
	}
	return nil
}

// AddLogEntry records e in a log of system systemID (for a manager log,
// systemID is ignored) as the BMC recording an event, and returns it as
// stored: an empty ID becomes the log's next number, a zero Created the
// clock's now (in UTC) except in a log style whose entries carry no time
// (LogsCrayEX). It panics on an unknown log.
func (s *Server) AddLogEntry(systemID string, ref bmc.LogRef, e bmc.LogEntry) bmc.LogEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.findLog(systemID, ref)
	if l == nil {
		panic(fmt.Sprintf("redfishtest: no log %s (system %q)", ref, systemID))
	}
	if e.ID == "" {
		next := 1
		for _, x := range l.entries {
			if n, err := strconv.Atoi(x.ID); err == nil && n >= next {
				next = n + 1
			}
		}
		e.ID = strconv.Itoa(next)
	}
	if e.Created.IsZero() && s.cfg.Logs != LogsCrayEX {
		e.Created = s.now().UTC().Truncate(time.Second)
	}
	if e.Type == "" {
		e.Type = l.entryType
	}
	l.entries = append(l.entries, e)
	return e
}

// LogEntries returns the entries a log holds, in the order it lists them
// (the oldest first), as the driver must read them. It panics on an
// unknown log.
func (s *Server) LogEntries(systemID string, ref bmc.LogRef) []bmc.LogEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.findLog(systemID, ref)
	if l == nil {
		panic(fmt.Sprintf("redfishtest: no log %s (system %q)", ref, systemID))
	}
	return slices.Clone(l.entries)
}

// LogRefs lists the logs of system systemID and of the manager.
func (s *Server) LogRefs(systemID string) []bmc.LogRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []bmc.LogRef
	for _, l := range s.logsFor(systemID) {
		out = append(out, bmc.LogRef{Scope: bmc.LogScopeSystem, ID: l.id})
	}
	for _, l := range s.mgrLogs {
		out = append(out, bmc.LogRef{Scope: bmc.LogScopeManager, ID: l.id})
	}
	return out
}

func (s *Server) logRoutes(handle func(method, path string, h http.HandlerFunc)) {
	for _, base := range []string{root + "/Systems/{id}/LogServices", managerURI + "/LogServices"} {
		handle("GET", base, s.auth(s.listLogServices))
		handle("GET", base+"/{log}", s.auth(s.getLogService))
		handle("GET", base+"/{log}/Entries", s.auth(s.listLogEntries))
		handle("GET", base+"/{log}/Entries/{entry}", s.auth(s.getLogEntry))
		handle("POST", base+"/{log}/Actions/LogService.ClearLog", s.auth(s.clearLog))
	}
}

// logServicesLink adds the LogServices link of a system (uri) or the
// manager to doc, where there are logs.
func (s *Server) logServicesLink(doc map[string]any, uri, systemID string) {
	if len(s.logsFor(systemID)) > 0 {
		doc["LogServices"] = link(uri + "/LogServices")
	}
}

// logBase resolves the request's log scope: the collection URI and logs.
// Called with s.mu held.
func (s *Server) logBase(w http.ResponseWriter, r *http.Request) (string, []*simLog) {
	id := r.PathValue("id")
	base := managerURI + "/LogServices"
	if id != "" {
		if s.lookup(w, r) == nil {
			return "", nil
		}
		base = root + "/Systems/" + id + "/LogServices"
	}
	logs := s.logsFor(id)
	if len(logs) == 0 {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no LogServices at "+base)
		return "", nil
	}
	return base, logs
}

func (s *Server) requestLog(w http.ResponseWriter, r *http.Request) (string, *simLog) {
	base, logs := s.logBase(w, r)
	if base == "" {
		return "", nil
	}
	for _, l := range logs {
		if l.id == r.PathValue("log") {
			return base + "/" + l.id, l
		}
	}
	redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no log service "+r.PathValue("log"))
	return "", nil
}

func (s *Server) listLogServices(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base, logs := s.logBase(w, r)
	if base == "" {
		return
	}
	var members []any
	for _, l := range logs {
		members = append(members, link(base+"/"+l.id))
	}
	writeCollection(w, base, "LogServiceCollection", "Log Service Collection", members)
}

func (s *Server) getLogService(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uri, l := s.requestLog(w, r)
	if l == nil {
		return
	}
	doc := map[string]any{
		"@odata.id": uri, "@odata.type": "#LogService.v1_1_3.LogService", "Id": l.id, "Name": l.name,
		"ServiceEnabled": true, "OverWritePolicy": "WrapsWhenFull", "DateTime": s.now().UTC().Format(time.RFC3339),
		"Entries": link(uri + "/Entries"), "Status": map[string]any{"State": "Enabled", "Health": "OK"},
	}
	if l.maxRecords > 0 {
		doc["MaxNumberOfRecords"] = l.maxRecords
	}
	if s.cfg.Logs != LogsILO5 {
		// iLO 5's IML and IEL do not say.
		doc["LogEntryType"] = l.entryType
	}
	if l.clearable {
		doc["Actions"] = map[string]any{"#LogService.ClearLog": map[string]any{"target": uri + "/Actions/LogService.ClearLog"}}
	}
	writeJSON(w, http.StatusOK, "", doc)
}

// listLogEntries answers the entry collection: inline entries (links only
// for LogsILO5), Config.LogPageSize per page with $skip.
func (s *Server) listLogEntries(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uri, l := s.requestLog(w, r)
	if l == nil {
		return
	}
	coll := uri + "/Entries"
	skip := 0
	if v := r.URL.Query().Get("$skip"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			redfishError(w, http.StatusBadRequest, "Base.1.8.QueryParameterValueFormatError", "$skip "+v+" is not a count")
			return
		}
		skip = n
	}
	end := len(l.entries)
	if size := s.cfg.LogPageSize; size > 0 {
		end = min(skip+size, end)
	}
	members := []any{}
	for i := skip; i < end; i++ {
		if s.cfg.Logs == LogsILO5 {
			members = append(members, link(coll+"/"+l.entries[i].ID))
			continue
		}
		members = append(members, s.renderEntry(coll, l, l.entries[i]))
	}
	doc := map[string]any{
		"@odata.id": coll, "@odata.type": "#LogEntryCollection.LogEntryCollection", "Name": l.name + " Entries",
		"Members": members, "Members@odata.count": len(l.entries),
	}
	if end < len(l.entries) {
		doc["Members@odata.nextLink"] = coll + "?$skip=" + strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, "", doc)
}

func (s *Server) getLogEntry(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uri, l := s.requestLog(w, r)
	if l == nil {
		return
	}
	for _, e := range l.entries {
		if e.ID == r.PathValue("entry") {
			writeJSON(w, http.StatusOK, "", s.renderEntry(uri+"/Entries", l, e))
			return
		}
	}
	redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no log entry "+r.PathValue("entry"))
}

func (s *Server) clearLog(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, l := s.requestLog(w, r)
	if l == nil {
		return
	}
	if !l.clearable {
		redfishError(w, http.StatusNotFound, "Base.1.8.ActionNotSupported", "log "+l.id+" cannot be cleared")
		return
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil && err.Error() != "EOF" {
		redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "body is not JSON")
		return
	}
	l.entries = nil
	s.stateChanged(r, r.PathValue("id"), "clear log "+l.id)
	w.WriteHeader(http.StatusNoContent)
}

// renderEntry writes e in the log style's shape.
func (s *Server) renderEntry(coll string, l *simLog, e bmc.LogEntry) map[string]any {
	doc := map[string]any{
		"@odata.id": coll + "/" + e.ID, "@odata.type": "#LogEntry.v1_15_0.LogEntry", "Id": e.ID, "Name": "Log Entry " + e.ID,
		"EntryType": e.Type, "Message": e.Message,
	}
	if e.Severity != bmc.SeverityUnknown {
		doc["Severity"] = string(e.Severity)
	}
	if !e.Created.IsZero() {
		doc["Created"] = e.Created.UTC().Format("2006-01-02T15:04:05-07:00")
	}
	if e.MessageID != "" {
		doc["MessageId"] = e.MessageID
	}
	switch s.cfg.Logs {
	case LogsDMTF:
		if e.Type == "SEL" {
			doc["EntryCode"], doc["SensorType"], doc["SensorNumber"] = "Assert", "Temperature", 1
		}
		if e.Resolved {
			doc["Resolved"] = true
		}
	case LogsILO5:
		doc["@odata.type"] = "#LogEntry.v1_0_0.LogEntry"
		doc["Created"] = e.Created.UTC().Format("2006-01-02T15:04:05Z")
		sev := map[bmc.Severity]string{bmc.SeverityOK: "Informational", bmc.SeverityWarning: "Caution", bmc.SeverityCritical: "Critical"}[e.Severity]
		if e.Resolved && e.Severity != bmc.SeverityCritical {
			sev = "Repaired"
		}
		doc["Severity"] = sev
		n, _ := strconv.Atoi(e.ID)
		doc["Oem"] = map[string]any{"Hpe": map[string]any{
			"@odata.type": "#HpeLogEntry.v2_3_0.HpeLogEntry", "Categories": []string{"Hardware"},
			"Class": 33, "ClassDescription": "Power", "Code": 1, "Count": 1, "EventNumber": 1000 + n,
			"LearnMoreLink": "http://www.hpe.com/support/class0x0021code0x0001-gen10", "Repaired": e.Resolved,
			"Updated": e.Created.UTC().Format("2006-01-02T15:04:05Z"),
		}}
	case LogsOpenBMC:
		doc["@odata.type"] = "#LogEntry.v1_9_0.LogEntry"
		if e.Type == "Oem" {
			doc["OemRecordFormat"] = "BMC Journal Entry"
		} else {
			doc["Resolved"] = e.Resolved
			doc["Modified"] = doc["Created"]
			doc["MessageArgs"] = []string{}
		}
	case LogsCrayEX:
		doc["@odata.type"] = "#LogEntry.v1_4_0.LogEntry"
		doc["OemRecordFormat"] = "Cray"
	}
	return doc
}

// HealthState is a resource's Status.Health and Status.HealthRollup as
// the simulator serves them ("" leaves the property out).
type HealthState struct {
	Health, HealthRollup string
}

// SetHealth sets the Status.Health and Status.HealthRollup of the
// resource at path: a system (/redfish/v1/Systems/1), the chassis
// (/redfish/v1/Chassis/1) or a manager (/redfish/v1/Managers/BMC). Every
// resource starts OK and OK. It panics on another path.
func (s *Server) SetHealth(path string, h HealthState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.healthPath(path) {
		panic("redfishtest: SetHealth: no resource " + path)
	}
	s.healthOf[path] = h
}

// Health returns what SetHealth set for path (OK and OK by default).
func (s *Server) Health(path string) HealthState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthState(path)
}

func (s *Server) healthPath(path string) bool {
	if path == chassisURI || path == managerURI || path == auxManagerURI {
		return true
	}
	return s.system(strings.TrimPrefix(path, root+"/Systems/")) != nil && strings.HasPrefix(path, root+"/Systems/")
}

// healthState is path's health; called with s.mu held.
func (s *Server) healthState(path string) HealthState {
	if h, ok := s.healthOf[path]; ok {
		return h
	}
	return HealthState{Health: "OK", HealthRollup: "OK"}
}

// statusOf adds the resource's Status to doc (not with Config.NoHealth).
// Called with s.mu held.
func (s *Server) statusOf(doc map[string]any, path string) {
	if s.cfg.NoHealth {
		return
	}
	h := s.healthState(path)
	st := map[string]any{"State": "Enabled"}
	if h.Health != "" {
		st["Health"] = h.Health
	}
	if h.HealthRollup != "" {
		st["HealthRollup"] = h.HealthRollup
	}
	doc["Status"] = st
}
