package bmc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// EventLogReader is implemented by drivers that can read the BMC's event
// logs: the logs of the system and of its manager (Redfish: the
// LogServices of the ComputerSystem and of the Manager, such as SEL, an
// event log, HPE iLO's IML, OpenBMC's EventLog; IPMI: the SEL). Methods
// change nothing and are safe for concurrent use. A BMC with no log at all
// fails with an error wrapping [ErrNotSupported] ([CapabilityEventLogs]).
// See docs/health-events.md.
type EventLogReader interface {
	// LogServices lists the logs, the system's first, in the BMC's order.
	LogServices(ctx context.Context) ([]LogService, error)

	// LogEntries reads entries of the log ref names, newest first (see
	// [SortLogNewestFirst]), at most q's limit, continuing after q.After.
	// A bad query is refused before any request with a permanent error
	// naming the field ([LogQuery.Validate]); an unknown log is a
	// permanent error naming the logs there are; a q.After whose entry is
	// no longer in the log fails with an error wrapping [ErrLogChanged].
	// Entries are bounded ([LogEntry.Bound]).
	LogEntries(ctx context.Context, ref LogRef, q LogQuery) (LogPage, error)
}

// EventLogClearer is implemented by drivers that can clear a log (the
// Redfish ClearLog action of a log service; IPMI Clear SEL). Read and keep the entries first:
// clearing loses them. A log the BMC does not offer to clear fails with an
// error wrapping [ErrNotSupported] ([CapabilityEventLogClear]); an unknown
// log with a permanent error naming the logs there are. Clearing an empty
// log succeeds. The BMC may add an entry of its own saying the log was
// cleared. Safe for concurrent use.
type EventLogClearer interface {
	ClearLog(ctx context.Context, ref LogRef) error
}

// LogScope says whose log it is.
type LogScope string

// Log scopes.
const (
	// LogScopeSystem: the system's (Redfish: under the ComputerSystem;
	// IPMI: the SEL, which records the system's events).
	LogScopeSystem LogScope = "system"
	// LogScopeManager: the BMC's own (Redfish: under the Manager).
	LogScopeManager LogScope = "manager"
)

// LogRef names one log of a BMC: whose it is, and its ID there (Redfish:
// the LogService's Id, e.g. "SEL", "Log1", "IML", "EventLog"; IPMI: "SEL").
// Plain strings, JSON-tagged: a task may store it.
type LogRef struct {
	Scope LogScope `json:"scope"`
	ID    string   `json:"id"`
}

// String names the log, e.g. "system/SEL".
func (r LogRef) String() string { return string(r.Scope) + "/" + r.ID }

// Validate checks the ref before anything is sent: a known scope and an ID
// that is not a path. The error names the field.
func (r LogRef) Validate() error {
	if r.Scope != LogScopeSystem && r.Scope != LogScopeManager {
		return Permanent(fmt.Errorf("log Scope %s: want %q or %q", QuoteBounded(string(r.Scope)), LogScopeSystem, LogScopeManager))
	}
	if r.ID == "" || strings.ContainsAny(r.ID, "/?#") {
		return Permanent(fmt.Errorf("log ID %s: want a log service ID such as \"SEL\", not empty nor a path", QuoteBounded(r.ID)))
	}
	return nil
}

// LogService describes one log.
type LogService struct {
	LogRef
	// Name is the BMC's name for it, e.g. "System Event Log".
	Name string `json:"name,omitempty"`
	// EntryType is the format of its entries as the BMC names it: SEL,
	// Event, Oem or Multiple (Redfish LogEntryType); "" when not said.
	EntryType string `json:"entryType,omitempty"`
	// Clearable reports that the BMC offers to clear it (Redfish: the
	// LogService has a ClearLog action).
	Clearable bool `json:"clearable,omitempty"`
	// MaxEntries is how many entries it holds at most; 0 when not said.
	MaxEntries int `json:"maxEntries,omitempty"`
}

// Severity is how a BMC rates a log entry.
type Severity string

// Severities. Drivers map vendors' words with [ParseSeverity].
const (
	SeverityOK       Severity = "OK"
	SeverityWarning  Severity = "Warning"
	SeverityCritical Severity = "Critical"
	// SeverityUnknown: the BMC did not say, or said something else.
	SeverityUnknown Severity = ""
)

// ParseSeverity maps a BMC's word for an entry's severity (any case,
// padding ignored): OK, Informational and Repaired (HPE iLO) are OK;
// Warning and Caution (iLO) are Warning; Critical is Critical; anything
// else is SeverityUnknown.
func ParseSeverity(s string) Severity {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ok", "informational", "info", "repaired":
		return SeverityOK
	case "warning", "caution":
		return SeverityWarning
	case "critical":
		return SeverityCritical
	}
	return SeverityUnknown
}

// LogEntry is one entry of a log. Empty strings and a zero Created mean
// the BMC did not say.
type LogEntry struct {
	// ID is the entry's ID in its log (Redfish Id; IPMI the SEL record
	// ID in decimal).
	ID string `json:"id"`
	// Created is when the BMC recorded it, in UTC. Zero when the BMC
	// gives no time (entries without Created; an IPMI record stamped
	// before the BMC's clock was set).
	Created time.Time `json:"created,omitempty"`
	// Severity is the entry's severity, mapped by [ParseSeverity].
	Severity Severity `json:"severity,omitempty"`
	// Message is the entry's text, at most MaxLogMessage bytes.
	Message string `json:"message,omitempty"`
	// MessageID names the message in its registry (Redfish MessageId,
	// e.g. "OpenBMC.0.1.PowerButtonPressed"); for an IPMI SEL record, the
	// sensor type and event, e.g. "SEL.PowerSupply.0x01".
	MessageID string `json:"messageID,omitempty"`
	// Type is the entry's format as the BMC names it: SEL, Event or Oem
	// (Redfish EntryType).
	Type string `json:"type,omitempty"`
	// Resolved reports that the BMC marks the condition resolved (Redfish
	// Resolved; HPE iLO's IML Oem.Hpe.Repaired).
	Resolved bool `json:"resolved,omitempty"`
}

// Limits of log reading.
const (
	// DefaultLogLimit is how many entries LogEntries returns when the
	// query sets no Limit.
	DefaultLogLimit = 100
	// MaxLogLimit is the largest Limit a query may set.
	MaxLogLimit = 1000
	// MaxLogMessage bounds LogEntry.Message, in bytes.
	MaxLogMessage = 512
	// MaxLogScan is the most entries a driver holds to sort one log: of
	// a longer log, it keeps the last MaxLogScan the BMC lists (the
	// newest, on every BMC seen) and sets LogPage.Truncated.
	MaxLogScan = 8192
)

// maxLogCursor bounds LogQuery.After: an entry ID, which BMCs keep short.
const maxLogCursor = 1024

// ErrLogChanged reports that a listing cannot continue: the entry
// LogQuery.After names is no longer in the log (it was cleared, or
// overwritten as a full log wraps). Start again without After. Permanent.
var ErrLogChanged = errors.New("the log changed since the page before (its last entry is gone); start again from the newest")

// LogQuery selects a page of a log.
type LogQuery struct {
	// Limit is the most entries returned. Defaults to DefaultLogLimit
	// (0); at most MaxLogLimit.
	Limit int `json:"limit,omitempty"`
	// After continues a listing: the LogPage.Next of the page before.
	// Defaults to "": from the newest entry.
	After string `json:"after,omitempty"`
}

// Validate checks the query; the error names the field.
func (q LogQuery) Validate() error {
	if q.Limit < 0 || q.Limit > MaxLogLimit {
		return Permanent(fmt.Errorf("log query Limit %d: want 0 (the default, %d) to %d", q.Limit, DefaultLogLimit, MaxLogLimit))
	}
	if len(q.After) > maxLogCursor || strings.ContainsFunc(q.After, func(r rune) bool { return r < ' ' || r == utf8.RuneError }) {
		return Permanent(fmt.Errorf("log query After %s: want the Next of a page read before", QuoteBounded(q.After)))
	}
	return nil
}

// EffectiveLimit is q.Limit, or DefaultLogLimit when it is 0.
func (q LogQuery) EffectiveLimit() int {
	if q.Limit == 0 {
		return DefaultLogLimit
	}
	return q.Limit
}

// LogPage is one page of a log, newest first.
type LogPage struct {
	Entries []LogEntry `json:"entries,omitempty"`
	// Next is set when older entries remain: pass it as LogQuery.After to
	// read them. "" when this page reaches the oldest entry.
	Next string `json:"next,omitempty"`
	// Truncated reports that the log held more entries than a driver
	// reads in one call (MaxLogScan, or the pages it follows): the oldest
	// are not listed.
	Truncated bool `json:"truncated,omitempty"`
}

// Bound cuts e's strings: Message to MaxLogMessage bytes, the others to
// MaxInventoryString, at a rune boundary, invalid UTF-8 replaced.
func (e *LogEntry) Bound() {
	e.Message = clipText(e.Message, MaxLogMessage)
	e.ID = clipText(e.ID, MaxInventoryString)
	e.MessageID = clipText(e.MessageID, MaxInventoryString)
	e.Type = clipText(e.Type, MaxInventoryString)
}

// SortLogNewestFirst orders a log's entries newest first, given in the
// order the BMC lists them. One key serves the whole log, so the order is
// the same whatever the entries' mix:
//
//  1. when every entry has a Created time: by it, the latest first (ties:
//     the later listed first);
//  2. else when every ID is a decimal number: by it, the largest first
//     (SEL record IDs and most BMCs' entry IDs grow);
//  3. else: the reverse of the BMC's listing (every BMC seen lists the
//     oldest first).
func SortLogNewestFirst(entries []LogEntry) {
	type keyed struct {
		e   LogEntry
		i   int
		num uint64
	}
	ks := make([]keyed, len(entries))
	allTimes, allNums := true, true
	for i, e := range entries {
		ks[i] = keyed{e: e, i: i}
		if e.Created.IsZero() {
			allTimes = false
		}
		v, err := strconv.ParseUint(e.ID, 10, 64)
		if err != nil {
			allNums = false
		}
		ks[i].num = v
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		switch {
		case allTimes:
			if c := b.e.Created.Compare(a.e.Created); c != 0 {
				return c
			}
		case allNums:
			if a.num != b.num {
				if a.num > b.num {
					return -1
				}
				return 1
			}
		}
		return b.i - a.i
	})
	for i := range ks {
		entries[i] = ks[i].e
	}
}

// PageLog is the paging every driver applies to a log it read whole: it
// sorts entries (in the BMC's listing order) newest first
// ([SortLogNewestFirst]), skips to just after the entry q.After names,
// and keeps q's limit, each entry bounded ([LogEntry.Bound]). It fails on
// an invalid q ([LogQuery.Validate]) and with [ErrLogChanged] when q.After
// names no entry. entries is reordered in place.
func PageLog(entries []LogEntry, q LogQuery) (LogPage, error) {
	if err := q.Validate(); err != nil {
		return LogPage{}, err
	}
	SortLogNewestFirst(entries)
	start := 0
	if q.After != "" {
		i := slices.IndexFunc(entries, func(e LogEntry) bool { return e.ID == q.After })
		if i < 0 {
			return LogPage{}, Permanent(fmt.Errorf("log entry %s: %w", QuoteBounded(q.After), ErrLogChanged))
		}
		start = i + 1
	}
	end := min(start+q.EffectiveLimit(), len(entries))
	var p LogPage
	if start < end {
		p.Entries = slices.Clone(entries[start:end])
	}
	for i := range p.Entries {
		p.Entries[i].Bound()
	}
	if end < len(entries) && start < end {
		p.Next = entries[end-1].ID // unbounded: the ID the next call looks for
	}
	return p, nil
}

// clipText makes s valid UTF-8 (invalid bytes replaced) and cuts it to at
// most n bytes at a rune boundary.
func clipText(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
