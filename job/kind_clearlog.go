package job

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

func init() { registerKind("clearLog", func(s *task.Spec) kind { return clearLogKind{s.ClearLog} }) }

// clearLogKind clears an event log (bmc.EventLogClearer) after storing its
// entries in the task's Status.ClearLog (docs/health-events.md, "Log
// clearing"):
//
//   - prepare reads the newest entries (bmc.EventLogReader, at most the
//     action's MaxEntries, one LogEntries call) and asks the Stepper to
//     store them: the clear goes out only after that write, so a crash in
//     between loses nothing. A task resumed before its clear was sent reads
//     again and adds what is new (the entries already stored are kept).
//   - check reads the newest page back: done when none of the stored
//     entries is left (the BMC may have added its own "log cleared" entry,
//     or new events). It is recheckable: a task resumed in phase Started
//     whose stored entries are gone was cleared before the crash, and is
//     not cleared again.
type clearLogKind struct{ a *task.ClearLogAction }

func (k clearLogKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k clearLogKind) usesBMC() bool                              { return true }
func (k clearLogKind) recheckable() bool                          { return true }

// preflight: the driver reads and clears logs, the BMC lists the log and
// offers to clear it.
func (k clearLogKind) preflight(ctx context.Context, t *taskView) error {
	r, ok := t.BMC.(bmc.EventLogReader)
	if _, clears := t.BMC.(bmc.EventLogClearer); !ok || !clears {
		return notSupported(t.ep, "clear event logs")
	}
	logs, err := r.LogServices(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(logs, func(l bmc.LogService) bool { return l.LogRef == k.a.Log }) {
		var have []string
		for _, l := range logs {
			have = append(have, l.LogRef.String())
		}
		return &bmc.OpError{Op: "clear log " + k.a.Log.String(), Endpoint: t.ep.String(),
			Err: fmt.Errorf("the BMC has no log %s (it has: %s): %w", k.a.Log, strings.Join(have, ", "), bmc.ErrNotSupported)}
	}
	return checkNeed(ctx, t.BMC, bmc.Need{ClearLog: &k.a.Log})
}

// prepare reads the entries to keep and asks for them to be stored before
// the clear.
func (k clearLogKind) prepare(ctx context.Context, t *taskView) (prep, error) {
	p, err := k.read(ctx, t, k.a.EntriesLimit())
	if err != nil {
		return prep{}, err
	}
	st := t.status.ClearLog
	if st == nil {
		st = &task.ClearLogStatus{}
		t.status.ClearLog = st
	}
	stored := logKeys(st.Entries)
	var fresh []task.LogEntry
	for _, e := range p.Entries {
		if se := task.LogEntryOf(e); !stored[se.Key()] {
			fresh = append(fresh, se)
		}
	}
	more := p.Next != "" || p.Truncated
	if st.ReadTime != nil && len(fresh) == 0 && (!more || st.Truncated) {
		return prep{}, nil // stored already: clear
	}
	all := append(fresh, st.Entries...) // what is new is newer
	if n := k.a.EntriesLimit(); len(all) > n {
		all, more = all[:n], true
	}
	st.Entries, st.Truncated, st.ReadTime = all, st.Truncated || more, timestamp.Ptr(t.now)
	return prep{store: true}, nil
}

func (k clearLogKind) send(ctx context.Context, t *taskView) error {
	c, ok := t.BMC.(bmc.EventLogClearer)
	if !ok {
		return notSupported(t.ep, "clear event logs")
	}
	return c.ClearLog(ctx, k.a.Log)
}

// check reads the newest entries: done when none of those stored is left.
// On a recheck (not sent in this step) with nothing stored, only an empty
// log is done: entries may have come since the read.
func (k clearLogKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	st := t.status.ClearLog
	if st == nil || st.ReadTime == nil {
		return false, "the log's entries are not stored yet", nil
	}
	p, err := k.read(ctx, t, 0)
	if err != nil {
		return false, "", err
	}
	stored, left := logKeys(st.Entries), 0
	for _, e := range p.Entries {
		if stored[task.LogEntryOf(e).Key()] {
			left++
		}
	}
	switch {
	case left > 0:
		return false, fmt.Sprintf("%d entries read before the clear are still in log %s", left, k.a.Log), nil
	case !t.Sent && len(st.Entries) == 0 && len(p.Entries) > 0:
		return false, fmt.Sprintf("log %s holds %d entries", k.a.Log, len(p.Entries)), nil
	}
	kept := fmt.Sprintf("%d entries", len(st.Entries))
	if st.Truncated {
		kept = "the newest " + kept + " (older ones were not kept)"
	}
	return true, fmt.Sprintf("cleared log %s (%d entries now); %s read before the clear are in the task's status", k.a.Log, len(p.Entries), kept), nil
}

func (k clearLogKind) read(ctx context.Context, t *taskView, limit int) (bmc.LogPage, error) {
	r, ok := t.BMC.(bmc.EventLogReader)
	if !ok {
		return bmc.LogPage{}, notSupported(t.ep, "read event logs")
	}
	return r.LogEntries(ctx, k.a.Log, bmc.LogQuery{Limit: limit})
}

func logKeys(es []task.LogEntry) map[string]bool {
	m := make(map[string]bool, len(es))
	for _, e := range es {
		m[e.Key()] = true
	}
	return m
}
