package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

var (
	_ bmc.EventLogReader  = (*Driver)(nil)
	_ bmc.EventLogClearer = (*Driver)(nil)
)

// Log is one event log of a fake BMC: how LogServices describes it, and
// its entries in the order the BMC lists them (the oldest first).
type Log struct {
	bmc.LogService
	Entries []bmc.LogEntry
}

// DefaultLogs are the logs a fake BMC has when Options.Logs is not set:
// the system's SEL (three entries) and the manager's event log (one), both
// clearable.
func DefaultLogs() []Log {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t := func(min int) time.Time { return base.Add(time.Duration(min) * time.Minute) }
	return []Log{
		{LogService: bmc.LogService{LogRef: bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}, Name: "System Event Log", EntryType: "SEL", Clearable: true, MaxEntries: 1024},
			Entries: []bmc.LogEntry{
				{ID: "1", Created: t(0), Severity: bmc.SeverityOK, Message: "System boot initiated", MessageID: "SEL.SystemEvent.0x01", Type: "SEL"},
				{ID: "2", Created: t(1), Severity: bmc.SeverityWarning, Message: "Fan 3 speed below threshold", MessageID: "SEL.Fan.0x01", Type: "SEL"},
				{ID: "3", Created: t(2), Severity: bmc.SeverityCritical, Message: "PSU 2 input lost", MessageID: "SEL.PowerSupply.0x03", Type: "SEL"},
			}},
		{LogService: bmc.LogService{LogRef: bmc.LogRef{Scope: bmc.LogScopeManager, ID: "Log1"}, Name: "Manager Event Log", EntryType: "Event", Clearable: true},
			Entries: []bmc.LogEntry{
				{ID: "1", Created: t(3), Severity: bmc.SeverityOK, Message: "The BMC firmware was updated", MessageID: "Update.1.0.UpdateSuccessful", Type: "Event"},
			}},
	}
}

// LogEntries implements [bmc.EventLogReader]: the entries of the log,
// paged by [bmc.PageLog]. Without [bmc.CapabilityEventLogs] it fails with
// an error wrapping [bmc.ErrNotSupported].
func (d *Driver) LogEntries(ctx context.Context, ref bmc.LogRef, q bmc.LogQuery) (bmc.LogPage, error) {
	if err := q.Validate(); err != nil {
		return bmc.LogPage{}, &bmc.OpError{Op: opName(MethodLogEntries), Endpoint: d.ep.String(), Err: err}
	}
	var entries []bmc.LogEntry
	err := d.do(ctx, MethodLogEntries, []any{ref, q}, func() error {
		l, err := d.bmc.log(ref)
		if err != nil {
			return err
		}
		entries = slices.Clone(l.Entries)
		return nil
	})
	if err != nil {
		return bmc.LogPage{}, err
	}
	p, err := bmc.PageLog(entries, q)
	if err != nil {
		return bmc.LogPage{}, &bmc.OpError{Op: opName(MethodLogEntries), Endpoint: d.ep.String(), Err: err}
	}
	return p, nil
}

// LogServices implements [bmc.EventLogReader]: Options.Logs (else
// [DefaultLogs]) as [bmc.LogService] values.
func (d *Driver) LogServices(ctx context.Context) ([]bmc.LogService, error) {
	var out []bmc.LogService
	err := d.do(ctx, MethodLogServices, nil, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityEventLogs] || len(b.logs) == 0 {
			return fmt.Errorf("listing event logs: %w", bmc.ErrNotSupported)
		}
		for _, l := range b.logs {
			s := l.LogService
			s.Clearable = s.Clearable && !b.lacks[bmc.CapabilityEventLogClear]
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// ClearLog implements [bmc.EventLogClearer]: it empties the log. A log
// that is not Clearable, or a BMC without [bmc.CapabilityEventLogClear],
// fails with an error wrapping [bmc.ErrNotSupported].
func (d *Driver) ClearLog(ctx context.Context, ref bmc.LogRef) error {
	return d.do(ctx, MethodClearLog, []any{ref}, func() error {
		l, err := d.bmc.log(ref)
		if err != nil {
			return err
		}
		if !l.Clearable || d.bmc.lacks[bmc.CapabilityEventLogClear] {
			return fmt.Errorf("clearing log %s: the BMC does not offer it: %w", ref, bmc.ErrNotSupported)
		}
		l.Entries = nil
		return nil
	})
}

// log finds a log; called with b.mu held.
func (b *BMC) log(ref bmc.LogRef) (*Log, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if b.lacks[bmc.CapabilityEventLogs] {
		return nil, fmt.Errorf("reading log %s: %w", ref, bmc.ErrNotSupported)
	}
	var have []string
	for i := range b.logs {
		if b.logs[i].LogRef == ref {
			return &b.logs[i], nil
		}
		have = append(have, b.logs[i].LogRef.String())
	}
	return nil, bmc.Permanent(fmt.Errorf("no log %s on this BMC; it has: %s", ref, strings.Join(have, ", ")))
}

// AddLogEntry appends e to the log ref names, as the BMC recording an
// event, and returns it as stored: an empty ID becomes the next number
// of the log, a zero Created the clock's now (in UTC). A test hook: it
// logs no call. It panics on an unknown log.
func (b *BMC) AddLogEntry(ref bmc.LogRef, e bmc.LogEntry) bmc.LogEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, err := b.log(ref)
	if err != nil {
		panic("fake: AddLogEntry: " + err.Error())
	}
	if e.ID == "" {
		next := 1
		for _, x := range l.Entries {
			if n, err := strconv.Atoi(x.ID); err == nil && n >= next {
				next = n + 1
			}
		}
		e.ID = strconv.Itoa(next)
	}
	if e.Created.IsZero() {
		e.Created = b.clock.Now().UTC()
	}
	l.Entries = append(l.Entries, e)
	return e
}

// Logs returns the BMC's logs with their entries as it holds them, in
// listing order (a test hook; logs no call).
func (b *BMC) Logs() []Log {
	b.mu.Lock()
	defer b.mu.Unlock()
	return copyLogs(b.logs)
}

func copyLogs(ls []Log) []Log {
	out := make([]Log, len(ls))
	for i, l := range ls {
		out[i] = Log{LogService: l.LogService, Entries: slices.Clone(l.Entries)}
	}
	return out
}
