package bmc_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

func TestParseSeverityHealth(t *testing.T) {
	for in, want := range map[string]bmc.Severity{"OK": bmc.SeverityOK, " informational ": bmc.SeverityOK, "Repaired": bmc.SeverityOK,
		"Caution": bmc.SeverityWarning, "WARNING": bmc.SeverityWarning, "Critical": bmc.SeverityCritical, "": bmc.SeverityUnknown, "Fatal": bmc.SeverityUnknown} {
		if got := bmc.ParseSeverity(in); got != want {
			t.Errorf("ParseSeverity(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]bmc.Health{"OK": bmc.HealthOK, "warning": bmc.HealthWarning, " Critical": bmc.HealthCritical, "Caution": bmc.HealthUnknown, "": bmc.HealthUnknown} {
		if got := bmc.ParseHealth(in); got != want {
			t.Errorf("ParseHealth(%q) = %q, want %q", in, got, want)
		}
	}
}

func ids(es []bmc.LogEntry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.ID)
	}
	return strings.Join(s, ",")
}

// The order is one key per log: times when all have one, else numeric IDs,
// else the listing reversed.
func TestSortLogNewestFirst(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		in   []bmc.LogEntry
		want string
	}{
		{"times, ties by listing", []bmc.LogEntry{{ID: "a", Created: t0}, {ID: "c", Created: t0.Add(time.Minute)}, {ID: "b", Created: t0}}, "c,b,a"},
		{"some without a time: numeric IDs", []bmc.LogEntry{{ID: "9", Created: t0}, {ID: "10"}, {ID: "2", Created: t0.Add(time.Hour)}}, "10,9,2"},
		{"neither: the listing reversed", []bmc.LogEntry{{ID: "x"}, {ID: "10"}, {ID: "y"}}, "y,10,x"},
	} {
		bmc.SortLogNewestFirst(c.in)
		if got := ids(c.in); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPageLog(t *testing.T) {
	var es []bmc.LogEntry
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		es = append(es, bmc.LogEntry{ID: id, Message: strings.Repeat("m", bmc.MaxLogMessage+10)})
	}
	var got []string
	q := bmc.LogQuery{Limit: 2}
	for {
		p, err := bmc.PageLog(append([]bmc.LogEntry(nil), es...), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			if len(e.Message) != bmc.MaxLogMessage {
				t.Fatalf("message of %d bytes, want it cut to %d", len(e.Message), bmc.MaxLogMessage)
			}
		}
		got = append(got, ids(p.Entries))
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	if strings.Join(got, "|") != "5,4|3,2|1" {
		t.Fatalf("pages %q", got)
	}
	if _, err := bmc.PageLog(es, bmc.LogQuery{After: "7"}); !errors.Is(err, bmc.ErrLogChanged) || bmc.IsTransient(err) {
		t.Fatalf("After a gone entry: %v; want permanent ErrLogChanged", err)
	}
	for _, q := range []bmc.LogQuery{{Limit: -1}, {Limit: bmc.MaxLogLimit + 1}} {
		if _, err := bmc.PageLog(es, q); err == nil || !strings.Contains(err.Error(), "Limit") || bmc.IsTransient(err) {
			t.Fatalf("%+v: %v; want a permanent error naming Limit", q, err)
		}
	}
	if p, _ := bmc.PageLog(es, bmc.LogQuery{}); len(p.Entries) != 5 || p.Next != "" {
		t.Fatalf("default limit: %d entries, next %q", len(p.Entries), p.Next)
	}
	for _, r := range []bmc.LogRef{{Scope: "bogus", ID: "SEL"}, {Scope: bmc.LogScopeSystem}, {Scope: bmc.LogScopeManager, ID: "a/b"}} {
		if err := r.Validate(); err == nil || bmc.IsTransient(err) {
			t.Fatalf("LogRef %+v: %v; want a permanent error", r, err)
		}
	}
}

// FuzzPageLog: any entries page without panics, within the limit, each
// entry once across pages.
func FuzzPageLog(f *testing.F) {
	f.Add("1,2,3", 2, int64(0))
	f.Add("a,,b,a", 1, int64(60))
	f.Fuzz(func(t *testing.T, idList string, limit int, step int64) {
		var es []bmc.LogEntry
		for i, id := range strings.Split(idList, ",") {
			e := bmc.LogEntry{ID: id}
			if step != 0 {
				e.Created = time.Unix(int64(i)*step%1e9, 0).UTC()
			}
			es = append(es, e)
		}
		q := bmc.LogQuery{Limit: limit}
		if q.Validate() != nil {
			return
		}
		p, err := bmc.PageLog(es, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) > q.EffectiveLimit() {
			t.Fatalf("%d entries over the limit %d", len(p.Entries), q.EffectiveLimit())
		}
	})
}
