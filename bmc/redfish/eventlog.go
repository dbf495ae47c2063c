package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

var (
	_ bmc.EventLogReader  = (*Driver)(nil)
	_ bmc.EventLogClearer = (*Driver)(nil)
)

// maxLogPages bounds the pages of one entry collection a LogEntries call
// follows (Members@odata.nextLink).
const maxLogPages = 256

// logServiceDoc is what the driver reads from a LogService, by gofish's
// names and types. gofish's LogService keeps the ClearLog target private
// and its ClearLog sends If-Match (retrying without it on 412), which
// actions do not need and some BMCs reject; the driver POSTs it itself.
type logServiceDoc struct {
	ODataID            string `json:"@odata.id"`
	ID                 string `json:"Id"`
	Name               string
	LogEntryType       schemas.LogEntryTypes
	MaxNumberOfRecords int
	Entries            schemas.Link
	Actions            struct {
		ClearLog schemas.ActionTarget `json:"#LogService.ClearLog"`
	}
	uri   string
	scope bmc.LogScope
}

func (l *logServiceDoc) service() bmc.LogService {
	return bmc.LogService{LogRef: bmc.LogRef{Scope: l.scope, ID: l.ID}, Name: l.Name, EntryType: string(l.LogEntryType),
		Clearable: l.Actions.ClearLog.Target != "", MaxEntries: max(l.MaxNumberOfRecords, 0)}
}

// LogServices implements [bmc.EventLogReader]: the LogServices of the
// system and of its manager, read once per connection (a collection and
// each member: a few GETs). A service with neither fails with an error
// wrapping [bmc.ErrNotSupported].
func (d *Driver) LogServices(ctx context.Context) ([]bmc.LogService, error) {
	const op = "list event logs"
	done, err := d.begin()
	if err != nil {
		return nil, d.opErr(op, err)
	}
	defer done()
	ls, err := d.logServices(ctx)
	if err != nil {
		return nil, d.opErr(op, err)
	}
	out := make([]bmc.LogService, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.service())
	}
	return out, nil
}

// logServices reads the log services once per connection.
func (d *Driver) logServices(ctx context.Context) ([]*logServiceDoc, error) {
	if d.logs != nil {
		return d.logs, nil
	}
	var out []*logServiceDoc
	seen := map[bmc.LogRef]bool{}
	add := func(scope bmc.LogScope, coll string) error {
		if coll == "" {
			return nil
		}
		members, err := d.collection(ctx, coll)
		if err != nil {
			return fmt.Errorf("list the %s's log services %s: %w", scope, coll, err)
		}
		for _, m := range members {
			l := &logServiceDoc{uri: m, scope: scope}
			if _, err := d.getJSON(ctx, m, l); err != nil {
				return fmt.Errorf("read log service %s: %w", m, err)
			}
			if l.ID == "" {
				l.ID = lastSegment(m)
			}
			ref := bmc.LogRef{Scope: scope, ID: l.ID}
			if ref.Validate() != nil || seen[ref] || len(out) >= bmc.MaxInventoryEntries {
				continue // a log no ref can name, or named twice: not listed
			}
			seen[ref] = true
			out = append(out, l)
		}
		return nil
	}
	doc, err := d.recentSystem(ctx)
	if err != nil {
		return nil, err
	}
	if err := add(bmc.LogScopeSystem, doc.LogServices); err != nil {
		return nil, err
	}
	m, err := d.manager(ctx)
	switch {
	case err == nil:
		if err := add(bmc.LogScopeManager, string(m.LogServices)); err != nil {
			return nil, err
		}
	case !errors.Is(err, bmc.ErrNotSupported):
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("neither the system %s nor its manager lists a log service: %w", d.systemURI, bmc.ErrNotSupported)
	}
	d.logs = out
	return out, nil
}

// logService finds the log ref names.
func (d *Driver) logService(ctx context.Context, ref bmc.LogRef) (*logServiceDoc, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	ls, err := d.logServices(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ls))
	for _, l := range ls {
		if l.scope == ref.Scope && l.ID == ref.ID {
			return l, nil
		}
		names = append(names, l.service().String())
	}
	return nil, bmc.Permanent(fmt.Errorf("no log %s on this BMC; it has: %s", bmc.QuoteBounded(ref.String()), bmc.QuoteBounded(strings.Join(names, ", "))))
}

// LogEntries implements [bmc.EventLogReader]. It reads the log's entry
// collection, every page (Members@odata.nextLink, at most 256 pages, the
// last bmc.MaxLogScan entries kept), and pages it with [bmc.PageLog].
// Members listed as links only (HPE iLO without $expand) are sorted by
// their IDs and read one GET each, only those of the page returned.
func (d *Driver) LogEntries(ctx context.Context, ref bmc.LogRef, q bmc.LogQuery) (bmc.LogPage, error) {
	op := "read event log " + ref.String()
	if err := q.Validate(); err != nil {
		return bmc.LogPage{}, d.opErr(op, err)
	}
	done, err := d.begin()
	if err != nil {
		return bmc.LogPage{}, d.opErr(op, err)
	}
	defer done()
	p, err := d.logEntries(ctx, ref, q)
	if err != nil {
		return bmc.LogPage{}, d.opErr(op, err)
	}
	return p, nil
}

func (d *Driver) logEntries(ctx context.Context, ref bmc.LogRef, q bmc.LogQuery) (bmc.LogPage, error) {
	l, err := d.logService(ctx, ref)
	if err != nil {
		return bmc.LogPage{}, err
	}
	if l.Entries == "" {
		return bmc.LogPage{}, bmc.Permanent(fmt.Errorf("the log service %s links no Entries", l.uri))
	}
	var all []bmc.LogEntry
	links := map[string]string{} // ID -> URI of members listed as links only
	truncated := false
	next, seen := string(l.Entries), map[string]bool{}
	for pages := 0; next != ""; pages++ {
		if pages == maxLogPages || seen[next] {
			truncated = true
			break
		}
		seen[next] = true
		var page entriesPage
		uri := next
		err := d.do(ctx, true, func(c *gofish.APIClient) error {
			resp, err := c.Get(uri)
			if err != nil {
				return err
			}
			defer drain(resp)
			body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
			if err != nil {
				return err
			}
			page, err = decodeEntriesPage(body)
			if err != nil {
				return bmc.Permanent(fmt.Errorf("GET %s: the BMC answered an invalid LogEntryCollection: %w", uri, err))
			}
			return nil
		})
		if err != nil {
			return bmc.LogPage{}, err
		}
		for _, e := range page.Entries {
			all = append(all, e.entry)
			if e.linkOnly {
				links[e.entry.ID] = e.uri
			}
		}
		if len(all) > bmc.MaxLogScan {
			all, truncated = all[len(all)-bmc.MaxLogScan:], true
		}
		next = page.Next
	}
	p, err := bmc.PageLog(all, q)
	if err != nil {
		return bmc.LogPage{}, err
	}
	for i, e := range p.Entries {
		uri, ok := links[e.ID]
		if !ok {
			continue
		}
		var full logEntryDoc
		if _, err := d.getJSON(ctx, uri, &full); err != nil {
			return bmc.LogPage{}, fmt.Errorf("read log entry %s: %w", uri, err)
		}
		if full.ID == "" {
			full.ID = e.ID
		}
		p.Entries[i] = full.entry()
		p.Entries[i].Bound()
	}
	p.Truncated = truncated
	return p, nil
}

// ClearLog implements [bmc.EventLogClearer]: it POSTs the log service's
// LogService.ClearLog action (without If-Match, like every action the
// driver sends), once. A log service without the action fails with an
// error wrapping [bmc.ErrNotSupported], before any request.
func (d *Driver) ClearLog(ctx context.Context, ref bmc.LogRef) error {
	op := "clear event log " + ref.String()
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	l, err := d.logService(ctx, ref)
	if err != nil {
		return d.opErr(op, err)
	}
	target := l.Actions.ClearLog.Target
	if target == "" {
		return d.opErr(op, fmt.Errorf("the log service %s has no LogService.ClearLog action: %w", l.uri, bmc.ErrNotSupported))
	}
	err = d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.Post(target, map[string]any{})
		drain(resp)
		return err
	})
	if err != nil {
		return d.opErr(op, err)
	}
	return nil
}

// checkClearLog is CheckNeed's rule for Need.ClearLog: the log is listed
// and has a ClearLog action.
func (d *Driver) checkClearLog(ctx context.Context, ref bmc.LogRef) error {
	l, err := d.logService(ctx, ref)
	if err != nil {
		return err
	}
	if l.Actions.ClearLog.Target == "" {
		return fmt.Errorf("clear log: the log service %s has no LogService.ClearLog action: %w", l.uri, bmc.ErrNotSupported)
	}
	return nil
}

// logEntryDoc is what the driver reads from a LogEntry, by gofish's names.
// gofish's LogEntry decodes every property and keeps a copy of the raw
// document per entry; a log is hundreds of them. Severity is a string:
// HPE iLO writes Informational, Caution and Repaired there.
type logEntryDoc struct {
	ODataID        string `json:"@odata.id"`
	ID             string `json:"Id"`
	Created        string
	EventTimestamp string
	Severity       string
	Message        string
	MessageID      string `json:"MessageId"`
	EntryType      schemas.LogEntryType
	Resolved       bool
	Oem            struct {
		Hpe, Hp struct {
			Repaired bool
		}
	}
}

// entry maps a LogEntry to bmc's. Created is Created, else EventTimestamp
// (the event's own time, which some BMCs give alone); a time that does not
// parse is left zero, not an error.
func (e logEntryDoc) entry() bmc.LogEntry {
	out := bmc.LogEntry{ID: e.ID, Severity: bmc.ParseSeverity(e.Severity), Message: strings.TrimSpace(e.Message),
		MessageID: e.MessageID, Type: string(e.EntryType),
		Resolved: e.Resolved || e.Oem.Hpe.Repaired || e.Oem.Hp.Repaired || strings.EqualFold(strings.TrimSpace(e.Severity), "Repaired")}
	if out.ID == "" {
		out.ID = lastSegment(e.ODataID)
	}
	for _, v := range []string{e.Created, e.EventTimestamp} {
		if t, err := parseDateTime(strings.TrimSpace(v)); err == nil && v != "" {
			out.Created = t.UTC()
			break
		}
	}
	return out
}

// pageEntry is one member of an entry collection page.
type pageEntry struct {
	entry    bmc.LogEntry
	linkOnly bool   // listed as {"@odata.id": ...} only
	uri      string // the member's @odata.id
}

// entriesPage is one page of a LogEntryCollection.
type entriesPage struct {
	Entries []pageEntry
	Next    string // Members@odata.nextLink, as a path
}

// decodeEntriesPage decodes one page of a LogEntryCollection. Members are
// entries (most BMCs put them inline) or links (iLO without $expand); a
// member that is neither, or has no ID to name it by, is an error.
func decodeEntriesPage(body []byte) (entriesPage, error) {
	var raw struct {
		Members  []json.RawMessage
		NextLink string `json:"Members@odata.nextLink"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return entriesPage{}, err
	}
	p := entriesPage{Next: raw.NextLink}
	if p.Next != "" {
		p.Next = pathOf(p.Next)
	}
	for i, m := range raw.Members {
		var e logEntryDoc
		if err := json.Unmarshal(m, &e); err != nil {
			return entriesPage{}, fmt.Errorf("member %d: %w", i, err)
		}
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(m, &keys)
		pe := pageEntry{entry: e.entry(), uri: e.ODataID, linkOnly: len(keys) == 1 && e.ODataID != ""}
		if pe.entry.ID == "" {
			return entriesPage{}, fmt.Errorf("member %d has neither Id nor @odata.id", i)
		}
		p.Entries = append(p.Entries, pe)
	}
	return p, nil
}
