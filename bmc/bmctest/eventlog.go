package bmctest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// LogPeer lets the Logs/... subtests compare what the driver reads with
// what the peer holds, and add entries.
type LogPeer struct {
	// Entries returns the entries the peer holds in the log ref names,
	// in the order it lists them (the suite sorts them newest first with
	// bmc.SortLogNewestFirst), each as the driver must read it.
	// Required.
	Entries func(ref bmc.LogRef) []bmc.LogEntry
	// Add, when set, makes the peer record n new entries in the log.
	// Defaults to nil: Logs/Paging and Logs/Clear work with what the logs
	// hold.
	Add func(ref bmc.LogRef, n int)
}

// logs checks bmc.EventLogReader and bmc.EventLogClearer:
//
//   - List: at least one log, valid and distinct refs;
//   - Read: every log reads newest first, bounded, equal to what the
//     peer holds where Target.Logs says;
//   - Paging: reading a log two entries at a time with LogPage.Next
//     lists every entry once, in the order one read gives;
//   - InvalidQuery: a bad Limit, an unknown log and a stale After are
//     refused with permanent errors naming the field or the log;
//   - Clear: ClearLog empties a clearable log (the peer may add an entry
//     of its own) and refuses one that is not, with bmc.ErrNotSupported.
func (s *suite) logs(t *testing.T, path string) {
	s.run(t, path, "List", func(tc *tcase) {
		tc.logServices(tc.logReader())
	})
	s.run(t, path, "Read", func(tc *tcase) {
		r := tc.logReader()
		for _, l := range tc.logServices(r) {
			p, err := r.LogEntries(tc.ctx(), l.LogRef, bmc.LogQuery{})
			tc.noErr(fmt.Sprintf("LogEntries(%s)", l.LogRef), err)
			tc.checkLogPage(l.LogRef, p, bmc.DefaultLogLimit)
			if peer := tc.target.Logs; peer != nil {
				want := tc.peerEntries(l.LogRef)
				if len(want) > bmc.DefaultLogLimit {
					want = want[:bmc.DefaultLogLimit]
				}
				tc.wantEntries(fmt.Sprintf("LogEntries(%s)", l.LogRef), p.Entries, want)
			}
		}
	})
	s.run(t, path, "Paging", func(tc *tcase) {
		r := tc.logReader()
		ref := tc.logServices(r)[0].LogRef
		if peer := tc.target.Logs; peer != nil && peer.Add != nil {
			peer.Add(ref, 5)
		}
		whole, err := r.LogEntries(tc.ctx(), ref, bmc.LogQuery{Limit: bmc.MaxLogLimit})
		tc.noErr(fmt.Sprintf("LogEntries(%s) at once", ref), err)
		if whole.Next != "" {
			tc.Skipf("log %s holds more than bmc.MaxLogLimit entries", ref)
		}
		var paged []bmc.LogEntry
		q := bmc.LogQuery{Limit: 2}
		for pages := 0; ; pages++ {
			if pages > len(whole.Entries) {
				tc.Fatalf("LogEntries(%s) paging by 2: %d pages for %d entries; Next never ends", ref, pages, len(whole.Entries))
			}
			p, err := r.LogEntries(tc.ctx(), ref, q)
			tc.noErr(fmt.Sprintf("LogEntries(%s, %+v)", ref, q), err)
			tc.checkLogPage(ref, p, 2)
			paged = append(paged, p.Entries...)
			if p.Next == "" {
				break
			}
			q.After = p.Next
		}
		tc.wantEntries(fmt.Sprintf("LogEntries(%s) two at a time", ref), paged, whole.Entries)
		if peer := tc.target.Logs; peer != nil {
			tc.wantEntries(fmt.Sprintf("LogEntries(%s)", ref), whole.Entries, tc.peerEntries(ref))
		}
	})
	s.run(t, path, "InvalidQuery", func(tc *tcase) {
		r := tc.logReader()
		ref := tc.logServices(r)[0].LogRef
		for _, lim := range []int{-1, bmc.MaxLogLimit + 1} {
			_, err := r.LogEntries(tc.ctx(), ref, bmc.LogQuery{Limit: lim})
			tc.permanentNaming(fmt.Sprintf("LogEntries(Limit %d)", lim), err, "Limit")
		}
		unknown := bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "bmctest-no-such-log"}
		_, err := r.LogEntries(tc.ctx(), unknown, bmc.LogQuery{})
		tc.permanentNaming("LogEntries of an unknown log", err, unknown.ID)
		_, err = r.LogEntries(tc.ctx(), ref, bmc.LogQuery{After: "bmctest-gone"})
		if !errors.Is(err, bmc.ErrLogChanged) {
			tc.Errorf("LogEntries(After an entry the log does not hold): %v; want an error wrapping bmc.ErrLogChanged", err)
		}
		tc.permanentNaming("LogEntries(After an entry the log does not hold)", err, "bmctest-gone")
	})
	s.run(t, path, "Clear", func(tc *tcase) {
		r := tc.logReader()
		c, ok := tc.drv.(bmc.EventLogClearer)
		if !ok {
			tc.Skipf("%T does not implement bmc.EventLogClearer", tc.drv)
		}
		if tc.opts.lacks(bmc.CapabilityEventLogClear) {
			tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityEventLogClear, bmc.CapabilityEventLogClear)
		}
		cleared := 0
		for _, l := range tc.logServices(r) {
			if !l.Clearable {
				tc.requireNotSupported(fmt.Sprintf("ClearLog(%s), a log the BMC does not offer to clear", l.LogRef), c.ClearLog(tc.ctx(), l.LogRef))
				continue
			}
			if peer := tc.target.Logs; peer != nil && peer.Add != nil {
				peer.Add(l.LogRef, 2)
			}
			before, err := r.LogEntries(tc.ctx(), l.LogRef, bmc.LogQuery{Limit: bmc.MaxLogLimit})
			tc.noErr(fmt.Sprintf("LogEntries(%s) before ClearLog", l.LogRef), err)
			tc.noErr(fmt.Sprintf("ClearLog(%s)", l.LogRef), c.ClearLog(tc.ctx(), l.LogRef))
			tc.noErr(fmt.Sprintf("ClearLog(%s) again", l.LogRef), c.ClearLog(tc.ctx(), l.LogRef))
			after, err := r.LogEntries(tc.ctx(), l.LogRef, bmc.LogQuery{Limit: bmc.MaxLogLimit})
			tc.noErr(fmt.Sprintf("LogEntries(%s) after ClearLog", l.LogRef), err)
			if tc.target.Logs != nil {
				tc.wantEntries(fmt.Sprintf("LogEntries(%s) after ClearLog", l.LogRef), after.Entries, tc.peerEntries(l.LogRef))
			} else if len(after.Entries) > 1 {
				tc.Errorf("LogEntries(%s) after ClearLog lists %d entries (before: %d); want none, or the BMC's one saying it cleared the log", l.LogRef, len(after.Entries), len(before.Entries))
			}
			cleared++
		}
		if cleared == 0 {
			tc.Skip("the peer has no log it offers to clear")
		}
	})
}

func (tc *tcase) logReader() bmc.EventLogReader {
	tc.Helper()
	r, ok := tc.drv.(bmc.EventLogReader)
	if !ok {
		tc.Skipf("%T does not implement bmc.EventLogReader", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityEventLogs) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityEventLogs, bmc.CapabilityEventLogs)
	}
	return r
}

// logServices lists the logs and checks the list.
func (tc *tcase) logServices(r bmc.EventLogReader) []bmc.LogService {
	tc.Helper()
	ls, err := r.LogServices(tc.ctx())
	if err != nil {
		tc.requireOpError("LogServices", err)
		tc.Fatalf("LogServices: %v", err)
	}
	if len(ls) == 0 {
		tc.Fatalf("LogServices lists no log; a BMC without one must fail with bmc.ErrNotSupported")
	}
	seen := map[bmc.LogRef]bool{}
	for _, l := range ls {
		if err := l.LogRef.Validate(); err != nil {
			tc.Errorf("LogServices lists %s: %v", l.LogRef, err)
		}
		if seen[l.LogRef] {
			tc.Errorf("LogServices lists %s twice", l.LogRef)
		}
		seen[l.LogRef] = true
		if tc.opts.lacks(bmc.CapabilityEventLogClear) && l.Clearable {
			tc.Errorf("LogServices says %s is clearable on a peer that lacks %s", l.LogRef, bmc.CapabilityEventLogClear)
		}
	}
	return ls
}

// checkLogPage checks a page's shape: at most limit entries, each with an
// ID, bounded, a known severity, newest first where every entry has a time.
func (tc *tcase) checkLogPage(ref bmc.LogRef, p bmc.LogPage, limit int) {
	tc.Helper()
	if len(p.Entries) > limit {
		tc.Errorf("LogEntries(%s) returned %d entries, over the limit %d", ref, len(p.Entries), limit)
	}
	if p.Next != "" && len(p.Entries) == 0 {
		tc.Errorf("LogEntries(%s) returned no entry and a Next", ref)
	}
	for i, e := range p.Entries {
		if e.ID == "" {
			tc.Errorf("LogEntries(%s)[%d] has no ID", ref, i)
		}
		if len(e.Message) > bmc.MaxLogMessage {
			tc.Errorf("LogEntries(%s)[%d] message of %d bytes, over bmc.MaxLogMessage: call LogEntry.Bound", ref, i, len(e.Message))
		}
		switch e.Severity {
		case bmc.SeverityOK, bmc.SeverityWarning, bmc.SeverityCritical, bmc.SeverityUnknown:
		default:
			tc.Errorf("LogEntries(%s)[%d] severity %q is not one of bmc's Severity constants (map it with bmc.ParseSeverity)", ref, i, e.Severity)
		}
		if !e.Created.IsZero() && e.Created.Location().String() != "UTC" {
			tc.Errorf("LogEntries(%s)[%d] Created %v is not in UTC", ref, i, e.Created)
		}
		if i > 0 && !e.Created.IsZero() && !p.Entries[i-1].Created.IsZero() && e.Created.After(p.Entries[i-1].Created) {
			tc.Errorf("LogEntries(%s): entry %s (%v) after the older entry %s (%v); want newest first", ref, e.ID, e.Created, p.Entries[i-1].ID, p.Entries[i-1].Created)
		}
	}
}

// peerEntries is what the peer holds in ref, newest first.
func (tc *tcase) peerEntries(ref bmc.LogRef) []bmc.LogEntry {
	want := slices.Clone(tc.target.Logs.Entries(ref))
	bmc.SortLogNewestFirst(want)
	for i := range want {
		want[i].Bound()
	}
	return want
}

// wantEntries compares entries read with those expected, times with Equal.
func (tc *tcase) wantEntries(what string, got, want []bmc.LogEntry) {
	tc.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		g, w := got[i], want[i]
		same = g.Created.Equal(w.Created)
		g.Created, w.Created = time.Time{}, time.Time{}
		same = same && g == w
	}
	if !same {
		tc.Errorf("%s = %s\nwant %s", what, entriesText(got), entriesText(want))
	}
}

func entriesText(es []bmc.LogEntry) string {
	if len(es) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\n  %+v", e)
	}
	return b.String()
}

// permanentNaming fails unless err is a permanent *bmc.OpError whose
// message names name.
func (tc *tcase) permanentNaming(what string, err error, name string) {
	tc.Helper()
	if err == nil {
		tc.Errorf("%s: succeeded; want a permanent error naming %q", what, name)
		return
	}
	tc.requireOpError(what, err)
	if bmc.IsTransient(err) {
		tc.Errorf("%s: error %q is transient; want permanent", what, err)
	}
	if !strings.Contains(err.Error(), name) {
		tc.Errorf("%s: error %q does not name %q", what, err, name)
	}
}

func (tc *tcase) checkLogsUnsupported(c Capability) {
	tc.Helper()
	switch c {
	case bmc.CapabilityEventLogs:
		r, ok := tc.drv.(bmc.EventLogReader)
		if !ok {
			tc.Skipf("%T does not implement bmc.EventLogReader", tc.drv)
		}
		_, err := r.LogServices(tc.ctx())
		tc.requireNotSupported("LogServices", err)
	case bmc.CapabilityEventLogClear:
		c, ok := tc.drv.(bmc.EventLogClearer)
		if !ok {
			tc.Skipf("%T does not implement bmc.EventLogClearer", tc.drv)
		}
		refs := []bmc.LogRef{{Scope: bmc.LogScopeSystem, ID: "SEL"}}
		if r, ok := tc.drv.(bmc.EventLogReader); ok && !tc.opts.lacks(bmc.CapabilityEventLogs) {
			refs = nil
			for _, l := range tc.logServices(r) {
				refs = append(refs, l.LogRef)
			}
		}
		for _, ref := range refs {
			err := c.ClearLog(tc.ctx(), ref)
			if tc.opts.lacks(bmc.CapabilityEventLogs) && err != nil && !errors.Is(err, bmc.ErrNotSupported) {
				tc.requireOpError(fmt.Sprintf("ClearLog(%s)", ref), err) // an unknown log is refused too
				continue
			}
			tc.requireNotSupported(fmt.Sprintf("ClearLog(%s)", ref), err)
		}
	}
}
