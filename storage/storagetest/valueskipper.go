package storagetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/storage"
)

// testSkipperEvents: ChangesSkipping returns the events Changes returns,
// in the same order and with the same cursor, with the values skip asked
// for left out (nil) and every other value present and owned by the caller;
// skip is asked about puts only, each with the event's key and revision.
func testSkipperEvents(t *testing.T, s storage.Store, f storage.ChangeFeed, v storage.ValueSkipper) {
	ctx := ctxT(t)
	revs := map[string]int64{}
	for i := range 6 {
		k := fmt.Sprintf("sk/%d", i)
		revs[k] = mustCreate(t, s, k, []byte(fmt.Sprintf("v%d", i)))
	}
	mustCreate(t, s, "other/1", []byte("x"))
	r, err := s.Update(ctx, "sk/1", []byte("v1b"), revs["sk/1"])
	if err != nil {
		t.Fatal(err)
	}
	revs["sk/1"] = r
	if err := s.Delete(ctx, "sk/2", 0); err != nil {
		t.Fatal(err)
	}
	want := mustChanges(t, f, "sk/", 0, 0)

	var mu sync.Mutex // a store may call skip from its own goroutines
	asked := map[string]int64{}
	skipOdd := func(key string, rev int64) bool {
		mu.Lock()
		defer mu.Unlock()
		asked[key] = rev
		return key == "sk/1" || key == "sk/3" || key == "sk/5"
	}
	got, err := v.ChangesSkipping(ctx, "sk/", 0, 0, skipOdd)
	if err != nil {
		t.Fatalf("ChangesSkipping: %v", err)
	}
	if got.Revision != want.Revision || len(got.Events) != len(want.Events) {
		t.Fatalf("ChangesSkipping = %s (cursor %d), Changes = %s (cursor %d)",
			evString(got.Events), got.Revision, evString(want.Events), want.Revision)
	}
	for i, g := range got.Events {
		w := want.Events[i]
		if g.Type != w.Type || g.Key != w.Key || g.Revision != w.Revision {
			t.Fatalf("event %d: ChangesSkipping %s, Changes %s", i, evString(got.Events[i:i+1]), evString(want.Events[i:i+1]))
		}
		skipped := g.Key == "sk/1" || g.Key == "sk/3" || g.Key == "sk/5"
		switch {
		case g.Type == storage.EventDelete:
			if g.Value != nil {
				t.Errorf("delete of %s carries a value %q", g.Key, g.Value)
			}
			if _, ok := asked[g.Key]; ok {
				t.Errorf("skip was asked about the delete of %s", g.Key)
			}
		case skipped:
			if g.Value != nil {
				t.Errorf("put of %s: value %q, want nil (skipped)", g.Key, g.Value)
			}
		default:
			if string(g.Value) != string(w.Value) {
				t.Errorf("put of %s: value %q, want %q", g.Key, g.Value, w.Value)
			}
		}
		if g.Type == storage.EventPut && asked[g.Key] != g.Revision {
			t.Errorf("skip was asked about %s at revision %d, want %d", g.Key, asked[g.Key], g.Revision)
		}
	}
	if _, ok := asked["other/1"]; ok {
		t.Errorf("skip was asked about a key outside the prefix")
	}
	// Values not skipped are the caller's.
	for _, g := range got.Events {
		if g.Key == "sk/0" {
			g.Value[0] = 'X'
		}
	}
	if rec := mustGet(t, s, "sk/0"); string(rec.Value) != "v0" {
		t.Fatalf("changing a returned value changed the store: %q", rec.Value)
	}
	// A nil skip is Changes.
	all, err := v.ChangesSkipping(ctx, "sk/", 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, all.Events, want.Events...)
	// Limits and cursors as Changes.
	page, err := v.ChangesSkipping(ctx, "sk/", 0, 2, func(string, int64) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.Revision != want.Events[1].Revision {
		t.Fatalf("ChangesSkipping limit 2 = %s cursor %d, want the first two of %s and cursor %d",
			evString(page.Events), page.Revision, evString(want.Events), want.Events[1].Revision)
	}
}

// testSkipperFollower: a Follower with SkipValues reports the same events as
// one without, with the skipped values left out after its first (listing)
// call.
func testSkipperFollower(t *testing.T, s storage.Store, _ storage.ChangeFeed, _ storage.ValueSkipper) {
	ctx := ctxT(t)
	plain := storage.NewFollower(s, "fs/")
	skipping := storage.NewFollower(s, "fs/")
	skipping.SkipValues(func(key string, _ int64) bool { return key == "fs/mine" })
	mustCreate(t, s, "fs/mine", []byte("m0"))
	for _, f := range []*storage.Follower{plain, skipping} {
		evs, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The first call lists: values are always there.
		if len(evs) != 1 || string(evs[0].Value) != "m0" {
			t.Fatalf("first Next = %s, want fs/mine=m0", evString(evs))
		}
	}
	rm := mustGet(t, s, "fs/mine").Revision
	r1, err := s.Update(ctx, "fs/mine", []byte("m1"), rm)
	if err != nil {
		t.Fatal(err)
	}
	r2 := mustCreate(t, s, "fs/theirs", []byte("t0"))
	want, err := plain.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, want, put("fs/mine", "m1", r1), put("fs/theirs", "t0", r2))
	got, err := skipping.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, got, storage.Event{Type: storage.EventPut, Key: "fs/mine", Revision: r1}, put("fs/theirs", "t0", r2))
	if got[0].Value != nil {
		t.Fatalf("skipped value of fs/mine = %q, want nil", got[0].Value)
	}
}
