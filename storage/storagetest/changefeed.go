package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/storage"
)

func evString(evs []storage.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s=%q@%d; ", e.Type, e.Key, e.Value, e.Revision)
	}
	return b.String()
}

func mustChanges(t *testing.T, f storage.ChangeFeed, prefix string, since int64, limit int) storage.Changes {
	t.Helper()
	ch, err := f.Changes(ctxT(t), prefix, since, limit)
	if err != nil {
		t.Fatalf("Changes(%q, since %d, limit %d): %v", prefix, since, limit, err)
	}
	for i := 1; i < len(ch.Events); i++ {
		if ch.Events[i].Revision <= ch.Events[i-1].Revision {
			t.Fatalf("Changes not sorted by revision: %s", evString(ch.Events))
		}
	}
	for _, e := range ch.Events {
		if e.Revision <= since {
			t.Fatalf("Changes(since %d) returned an event at revision %d", since, e.Revision)
		}
		if e.Revision > ch.Revision {
			t.Fatalf("Changes returned an event at revision %d beyond its cursor %d", e.Revision, ch.Revision)
		}
	}
	return ch
}

func wantEvents(t *testing.T, got []storage.Event, want ...storage.Event) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = g.Type == w.Type && g.Key == w.Key && string(g.Value) == string(w.Value) && g.Revision == w.Revision &&
			(w.Type != storage.EventDelete || g.Value == nil)
	}
	if !ok {
		t.Fatalf("events:\n got  %s\n want %s", evString(got), evString(want))
	}
}

func put(key, value string, rev int64) storage.Event {
	return storage.Event{Type: storage.EventPut, Key: key, Value: []byte(value), Revision: rev}
}

func del(key string, rev int64) storage.Event {
	return storage.Event{Type: storage.EventDelete, Key: key, Revision: rev}
}

func testFeedPutsDeletes(t *testing.T, s storage.Store, f storage.ChangeFeed) {
	ctx := ctxT(t)
	start := mustChanges(t, f, "", 0, 0)
	if len(start.Events) != 0 {
		t.Fatalf("Changes on an empty store: %s", evString(start.Events))
	}
	ra := mustCreate(t, s, "a", []byte("1"))
	rb := mustCreate(t, s, "b", []byte("1"))
	rb2, err := s.Update(ctx, "b", []byte("2"), rb)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a", ra); err != nil {
		t.Fatal(err)
	}
	ch := mustChanges(t, f, "", start.Revision, 0)
	if len(ch.Events) != 2 || ch.Events[1].Type != storage.EventDelete {
		t.Fatalf("Changes after put, update, delete: %s", evString(ch.Events))
	}
	rdel := ch.Events[1].Revision
	if rdel <= rb2 {
		t.Fatalf("delete reported at revision %d, want a revision of its own after %d", rdel, rb2)
	}
	wantEvents(t, ch.Events, put("b", "2", rb2), del("a", rdel))
	if ch.Revision < rdel {
		t.Fatalf("cursor %d is behind the last event %d", ch.Revision, rdel)
	}
	// Nothing new: empty, cursor does not go back.
	again := mustChanges(t, f, "", ch.Revision, 0)
	if len(again.Events) != 0 || again.Revision < ch.Revision {
		t.Fatalf("Changes with nothing new = %s cursor %d (was %d)", evString(again.Events), again.Revision, ch.Revision)
	}
	// A write after the delete has a larger revision than the delete.
	rc := mustCreate(t, s, "c", []byte("1"))
	if rc <= rdel {
		t.Fatalf("Create after a delete at %d got revision %d", rdel, rc)
	}
	wantEvents(t, mustChanges(t, f, "", again.Revision, 0).Events, put("c", "1", rc))
	// Events own their values.
	evs := mustChanges(t, f, "c", 0, 0).Events
	evs[0].Value[0] = 'X'
	wantEvents(t, mustChanges(t, f, "c", 0, 0).Events, put("c", "1", rc))
}

func testFeedPrefix(t *testing.T, s storage.Store, f storage.ChangeFeed) {
	ctx := ctxT(t)
	r1 := mustCreate(t, s, "boot/1", []byte("x"))
	mustCreate(t, s, "jobs/1", []byte("x"))
	mustCreate(t, s, "boot%/2", []byte("x"))
	r2 := mustCreate(t, s, "boot/2", []byte("x"))
	if err := s.Delete(ctx, "jobs/1", 0); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, mustChanges(t, f, "boot/", 0, 0).Events, put("boot/1", "x", r1), put("boot/2", "x", r2))
	wantEvents(t, mustChanges(t, f, "nothing/", 0, 0).Events)
	if n := len(mustChanges(t, f, "", 0, 0).Events); n != 4 {
		t.Fatalf("Changes with an empty prefix returned %d events, want 4", n)
	}
}

func testFeedLimit(t *testing.T, s storage.Store, f storage.ChangeFeed) {
	var revs []int64
	for i := range 7 {
		revs = append(revs, mustCreate(t, s, fmt.Sprintf("k%d", i), []byte("v")))
	}
	var got []int64
	since := int64(0)
	for range 10 {
		ch := mustChanges(t, f, "", since, 3)
		if len(ch.Events) > 3 {
			t.Fatalf("Changes with limit 3 returned %d events", len(ch.Events))
		}
		for _, e := range ch.Events {
			got = append(got, e.Revision)
		}
		if len(ch.Events) == 0 {
			break
		}
		since = ch.Revision
	}
	if fmt.Sprint(got) != fmt.Sprint(revs) {
		t.Fatalf("paging with limit 3 returned revisions %v, want %v", got, revs)
	}
}

func testFeedLatest(t *testing.T, s storage.Store, f storage.ChangeFeed) {
	ctx := ctxT(t)
	start := mustChanges(t, f, "", 0, 0).Revision
	rev := mustCreate(t, s, "k", []byte("1"))
	for i := 2; i <= 4; i++ {
		var err error
		if rev, err = s.Update(ctx, "k", []byte(fmt.Sprint(i)), rev); err != nil {
			t.Fatal(err)
		}
	}
	evs := mustChanges(t, f, "", start, 0).Events
	// Level-triggered: the latest state must be there, at its revision, and
	// must be the last event for the key.
	if len(evs) == 0 || evs[len(evs)-1].Revision != rev || string(evs[len(evs)-1].Value) != "4" {
		t.Fatalf("Changes after 4 writes to one key = %s, want the last one put k=4@%d last", evString(evs), rev)
	}
}

func testFeedCancelled(t *testing.T, s storage.Store, f storage.ChangeFeed) {
	mustCreate(t, s, "k", []byte("v"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.Changes(ctx, "", 0, 0)
	wantErr(t, "Changes with a cancelled context", err, context.Canceled)
}

// testFeedConcurrent follows the feed while writers run and checks that
// the follower's view converges to List and that the cursor never skips a
// change (every key written is seen at its final revision).
func testFeedConcurrent(t *testing.T, s storage.Store, f storage.ChangeFeed) {
	ctx := ctxT(t)
	const writers, keys = 4, 15
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys {
				key := fmt.Sprintf("c/%d/%d", w, i)
				rev, err := s.Create(ctx, key, []byte("1"))
				if err == nil {
					_, err = s.Update(ctx, key, []byte("2"), rev)
				}
				if err == nil && i%3 == 0 {
					err = s.Delete(ctx, key, 0)
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(stop) }()
	state := map[string]storage.Event{}
	var since int64
	poll := func() {
		ch := mustChanges(t, f, "c/", since, 7)
		for _, e := range ch.Events {
			if old, ok := state[e.Key]; ok && old.Revision >= e.Revision {
				t.Fatalf("event %s@%d after %s@%d for the same key", e.Type, e.Revision, old.Type, old.Revision)
			}
			state[e.Key] = e
		}
		since = ch.Revision
	}
	for done := false; !done; {
		select {
		case <-stop:
			done = true
		default:
		}
		poll()
	}
	for {
		before := since
		poll()
		if since == before {
			break
		}
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	recs, err := s.List(ctx, "c/")
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, e := range state {
		if e.Type == storage.EventPut {
			live++
		}
	}
	if live != len(recs) {
		t.Fatalf("feed shows %d live keys, List %d", live, len(recs))
	}
	for _, r := range recs {
		e := state[r.Key]
		if e.Type != storage.EventPut || e.Revision != r.Revision || string(e.Value) != string(r.Value) {
			t.Fatalf("feed's last event for %s is %s@%d, List has rev %d", r.Key, e.Type, e.Revision, r.Revision)
		}
	}
	if want := writers * keys * 2 / 3; live != want {
		t.Fatalf("%d live keys, want %d", live, want)
	}
}

// hideFeed hides a store's optional capabilities so Follower falls back.
type hideFeed struct{ storage.Store }

func testFollower(t *testing.T, s storage.Store) { followerCheck(t, s, s) }

func testFollowerWithoutFeed(t *testing.T, s storage.Store) {
	followerCheck(t, s, hideFeed{s})
}

func followerCheck(t *testing.T, s, followed storage.Store) {
	ctx := ctxT(t)
	ra := mustCreate(t, s, "f/a", []byte("1"))
	mustCreate(t, s, "other", []byte("1"))
	fl := storage.NewFollower(followed, "f/")
	next := func() []storage.Event {
		t.Helper()
		evs, err := fl.Next(ctx)
		if err != nil {
			t.Fatalf("Follower.Next: %v", err)
		}
		return evs
	}
	wantEvents(t, next(), put("f/a", "1", ra))
	wantEvents(t, next())
	rb := mustCreate(t, s, "f/b", []byte("1"))
	ra2, err := s.Update(ctx, "f/a", []byte("2"), ra)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, next(), put("f/b", "1", rb), put("f/a", "2", ra2))
	if err := s.Delete(ctx, "f/b", rb); err != nil {
		t.Fatal(err)
	}
	evs := next()
	if len(evs) != 1 || evs[0].Type != storage.EventDelete || evs[0].Key != "f/b" || evs[0].Value != nil {
		t.Fatalf("Follower after a delete: %s", evString(evs))
	}
	wantEvents(t, next())
	// A key deleted and re-created between polls shows up as its new value.
	if err := s.Delete(ctx, "f/a", 0); err != nil {
		t.Fatal(err)
	}
	ra3 := mustCreate(t, s, "f/a", []byte("3"))
	wantEvents(t, next(), put("f/a", "3", ra3))
	// Created and deleted between polls: nothing to report.
	mustCreate(t, s, "f/c", []byte("1"))
	if err := s.Delete(ctx, "f/c", 0); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, next())
}

func testCompacted(t *testing.T, s storage.Store, f storage.ChangeFeed, c storage.Compactor) {
	ctx := ctxT(t)
	ra := mustCreate(t, s, "a", []byte("1"))
	mustCreate(t, s, "b", []byte("1"))
	if err := s.Delete(ctx, "b", 0); err != nil {
		t.Fatal(err)
	}
	head := mustChanges(t, f, "", 0, 0).Revision
	rc := mustCreate(t, s, "c", []byte("1"))
	if err := c.Compact(ctx, head); err != nil {
		t.Fatalf("Compact(%d): %v", head, err)
	}
	_, err := f.Changes(ctx, "", 0, 0)
	var ce *storage.CompactedError
	if !errors.As(err, &ce) || !errors.Is(err, storage.ErrCompacted) || ce.Compacted != head {
		t.Fatalf("Changes(since 0) after Compact(%d): %v; want a *storage.CompactedError at %d", head, err, head)
	}
	// From the compaction point on, the feed works and Get/List are unchanged.
	wantEvents(t, mustChanges(t, f, "", head, 0).Events, put("c", "1", rc))
	wantRecord(t, mustGet(t, s, "a"), "a", []byte("1"), ra)
	recs, err := s.List(ctx, "")
	if err != nil || len(recs) != 2 {
		t.Fatalf("List after Compact = %d records, %v; want 2", len(recs), err)
	}
	// Compacting to an older revision is a no-op.
	if err := c.Compact(ctx, 1); err != nil {
		t.Fatalf("Compact to an older revision: %v", err)
	}
	if _, err := f.Changes(ctx, "", head, 0); err != nil {
		t.Fatalf("Changes at the compaction point after a no-op Compact: %v", err)
	}
}

func testCompactedFollower(t *testing.T, s storage.Store, f storage.ChangeFeed, c storage.Compactor) {
	ctx := ctxT(t)
	mustCreate(t, s, "f/a", []byte("1"))
	rb := mustCreate(t, s, "f/b", []byte("1"))
	fl := storage.NewFollower(s, "f/")
	if evs, err := fl.Next(ctx); err != nil || len(evs) != 2 {
		t.Fatalf("first Next = %s, %v", evString(evs), err)
	}
	if err := s.Delete(ctx, "f/a", 0); err != nil {
		t.Fatal(err)
	}
	rb2, err := s.Update(ctx, "f/b", []byte("2"), rb)
	if err != nil {
		t.Fatal(err)
	}
	rd := mustCreate(t, s, "f/d", []byte("1"))
	if err := c.Compact(ctx, rd); err != nil {
		t.Fatal(err)
	}
	evs, err := fl.Next(ctx)
	if err != nil {
		t.Fatalf("Next after compaction: %v", err)
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].Key < evs[j].Key })
	if len(evs) != 3 || evs[0].Key != "f/a" || evs[0].Type != storage.EventDelete {
		t.Fatalf("Next after compaction = %s; want delete f/a, put f/b, put f/d", evString(evs))
	}
	wantEvents(t, evs[1:], put("f/b", "2", rb2), put("f/d", "1", rd))
	re := mustCreate(t, s, "f/e", []byte("1"))
	got, err := fl.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, got, put("f/e", "1", re))
}
