package task

import (
	"strconv"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/timestamp"
)

// ClearLogAction clears one of the BMC's event logs (bmc.EventLogClearer:
// Redfish LogService.ClearLog, IPMI Clear SEL). Before the clear is sent,
// the task reads the log's entries, newest first, and stores them in its
// Status.ClearLog with the job, so nothing is lost to a crash between the
// read and the clear; then it clears and reads back until none of the
// entries it stored is left (the log empty, or holding only what the BMC
// added since, such as its own "log cleared" entry). A BMC without the log,
// or that does not offer to clear it, fails the job's preflight with reason
// NotSupported before anything was sent. docs/health-events.md.
type ClearLogAction struct {
	// Log names the log: its scope ("system" or "manager") and its ID on
	// the BMC (Redfish: the LogService's Id, e.g. "SEL", "IML",
	// "EventLog", "Log1"; IPMI: "SEL"). `bmcjob log list` shows them.
	Log bmc.LogRef `json:"log"`
	// MaxEntries is how many entries, the newest, are kept in the status.
	// A longer log is cleared all the same; the status says how many were
	// kept (Truncated). Defaults to 1000 (0); at most 1000.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	MaxEntries int `json:"maxEntries,omitempty"`
}

// MaxClearLogEntries is the most entries a clearLog task keeps.
const MaxClearLogEntries = bmc.MaxLogLimit

// EntriesLimit is MaxEntries, or MaxClearLogEntries when it is 0.
func (a *ClearLogAction) EntriesLimit() int {
	if a.MaxEntries == 0 {
		return MaxClearLogEntries
	}
	return a.MaxEntries
}

func (a *ClearLogAction) describe() string { return "clear log " + a.Log.String() }

func (a *ClearLogAction) validate(path string) error {
	if a.Log.Scope != bmc.LogScopeSystem && a.Log.Scope != bmc.LogScopeManager {
		return fieldErr(path, "log.scope", "%q is not one of system, manager", truncate(string(a.Log.Scope), 80))
	}
	if err := a.Log.Validate(); err != nil {
		return fieldErr(path, "log.id", "%q: want a log service ID such as \"SEL\", not empty nor a path", truncate(a.Log.ID, 80))
	}
	if len(a.Log.ID) > 253 {
		return fieldErr(path, "log.id", "%d characters, at most 253", len(a.Log.ID))
	}
	if a.MaxEntries < 0 || a.MaxEntries > MaxClearLogEntries {
		return fieldErr(path, "maxEntries", "%d: want 0 (the default, %d) to %d", a.MaxEntries, MaxClearLogEntries, MaxClearLogEntries)
	}
	return nil
}

// ClearLogStatus is what a clearLog task stored.
type ClearLogStatus struct {
	// Entries are the log's entries read before the clear, newest first,
	// at most the action's MaxEntries. A task resumed before its clear
	// was sent reads again and adds what is new.
	//
	// +kubebuilder:validation:MaxItems=1000
	Entries []LogEntry `json:"entries,omitempty"`
	// ReadTime is when the entries were (last) read, stored before the
	// clear was sent.
	ReadTime *timestamp.Time `json:"readTime,omitempty"`
	// Truncated is set when the log held more entries than were kept.
	Truncated bool `json:"truncated,omitempty"`
}

// LogEntry is one stored entry of a log: bmc.LogEntry with a timestamp
// (CRD-embeddable). Empty strings and a nil Created mean the BMC did not
// say.
type LogEntry struct {
	ID        string          `json:"id"`
	Created   *timestamp.Time `json:"created,omitempty"`
	Severity  bmc.Severity    `json:"severity,omitempty"`
	Message   string          `json:"message,omitempty"`
	MessageID string          `json:"messageID,omitempty"`
	Type      string          `json:"type,omitempty"`
	Resolved  bool            `json:"resolved,omitempty"`
}

// LogEntryOf is e as stored.
func LogEntryOf(e bmc.LogEntry) LogEntry {
	s := LogEntry{ID: e.ID, Severity: e.Severity, Message: e.Message, MessageID: e.MessageID, Type: e.Type, Resolved: e.Resolved}
	if !e.Created.IsZero() {
		s.Created = timestamp.Ptr(e.Created.UTC())
	}
	return s
}

// Key identifies the entry among those of its log, before and after a
// clear: its ID, time, message ID and message (SEL record IDs start again
// at 1 after a clear, so the ID alone does not).
func (e LogEntry) Key() string {
	t := ""
	if e.Created != nil {
		t = strconv.FormatInt(e.Created.Truncate(time.Second).Unix(), 10)
	}
	return e.ID + "\x00" + t + "\x00" + e.MessageID + "\x00" + e.Message
}
