package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage"
)

// Factory returns a fresh, empty Store for one subtest. It registers any
// cleanup (closing the store, dropping a schema) with t.Cleanup.
type Factory func(t *testing.T) storage.Store

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"GetMissing", testGetMissing},
		{"CreateGet", testCreateGet},
		{"CreateExisting", testCreateExisting},
		{"EmptyValue", testEmptyValue},
		{"UpdateCompareAndSwap", testUpdateCAS},
		{"UpdateMissing", testUpdateMissing},
		{"DeleteConditional", testDeleteConditional},
		{"DeleteUnconditional", testDeleteUnconditional},
		{"DeleteMissing", testDeleteMissing},
		{"RecreateAfterDelete", testRecreateAfterDelete},
		{"RevisionsStrictlyIncreasing", testRevisionsIncreasing},
		{"ListPrefix", testListPrefix},
		{"ListWildcardCharacters", testListWildcards},
		{"LargeValues", testLargeValues},
		{"ValueTooLarge", testValueTooLarge},
		{"InvalidKeys", testInvalidKeys},
		{"LongAndUnicodeKeys", testLongKeys},
		{"CancelledContext", testCancelledContext},
		{"ValuesNotAliased", testNotAliased},
		{"ConcurrentCreateOneKey", testConcurrentCreate},
		{"ConcurrentUpdateOneKey", testConcurrentUpdate},
		{"ConcurrentWritersManyKeys", testConcurrentManyKeys},
		{"ListConsistentUnderWrites", testListUnderWrites},
		{"Follower", testFollower},
		{"FollowerWithoutFeed", testFollowerWithoutFeed},
		{"ChangeFeed/PutsAndDeletes", needFeed(testFeedPutsDeletes)},
		{"ChangeFeed/Prefix", needFeed(testFeedPrefix)},
		{"ChangeFeed/LimitAndCursor", needFeed(testFeedLimit)},
		{"ChangeFeed/LatestStateOnly", needFeed(testFeedLatest)},
		{"ChangeFeed/CancelledContext", needFeed(testFeedCancelled)},
		{"ChangeFeed/UnderConcurrentWrites", needFeed(testFeedConcurrent)},
		{"ValueSkipper/SameEventsWithoutSkippedValues", needSkipper(testSkipperEvents)},
		{"ValueSkipper/Follower", needSkipper(testSkipperFollower)},
		{"Compactor/CompactedError", needCompactor(testCompacted)},
		{"Compactor/FollowerRecovers", needCompactor(testCompactedFollower)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

func needFeed(fn func(*testing.T, storage.Store, storage.ChangeFeed)) func(*testing.T, storage.Store) {
	return func(t *testing.T, s storage.Store) {
		f, ok := s.(storage.ChangeFeed)
		if !ok {
			t.Skipf("%T does not implement storage.ChangeFeed", s)
		}
		fn(t, s, f)
	}
}

func needSkipper(fn func(*testing.T, storage.Store, storage.ChangeFeed, storage.ValueSkipper)) func(*testing.T, storage.Store) {
	return func(t *testing.T, s storage.Store) {
		f, ok := s.(storage.ChangeFeed)
		v, ok2 := s.(storage.ValueSkipper)
		if !ok || !ok2 {
			t.Skipf("%T does not implement both storage.ChangeFeed and storage.ValueSkipper", s)
		}
		fn(t, s, f, v)
	}
}

func needCompactor(fn func(*testing.T, storage.Store, storage.ChangeFeed, storage.Compactor)) func(*testing.T, storage.Store) {
	return func(t *testing.T, s storage.Store) {
		f, ok := s.(storage.ChangeFeed)
		c, ok2 := s.(storage.Compactor)
		if !ok || !ok2 {
			t.Skipf("%T does not implement both storage.ChangeFeed and storage.Compactor", s)
		}
		fn(t, s, f, c)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, s storage.Store, key string, value []byte) int64 {
	t.Helper()
	rev, err := s.Create(ctxT(t), key, value)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	if rev <= 0 {
		t.Fatalf("Create(%q) returned revision %d, want > 0", key, rev)
	}
	return rev
}

func mustGet(t *testing.T, s storage.Store, key string) storage.Record {
	t.Helper()
	r, err := s.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return r
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want errors.Is(err, %v)", what, err, want)
	}
}

func wantRecord(t *testing.T, got storage.Record, key string, value []byte, rev int64) {
	t.Helper()
	if got.Key != key || !bytes.Equal(got.Value, value) || got.Revision != rev {
		t.Fatalf("record = {%q, %d bytes %q, rev %d}, want {%q, %d bytes %q, rev %d}",
			got.Key, len(got.Value), trunc(got.Value), got.Revision, key, len(value), trunc(value), rev)
	}
}

func trunc(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "..."
	}
	return string(b)
}

func testGetMissing(t *testing.T, s storage.Store) {
	_, err := s.Get(ctxT(t), "missing")
	wantErr(t, "Get of a missing key", err, storage.ErrNotFound)
	recs, err := s.List(ctxT(t), "")
	if err != nil || len(recs) != 0 {
		t.Fatalf("List of an empty store = %d records, %v; want none", len(recs), err)
	}
}

func testCreateGet(t *testing.T, s storage.Store) {
	rev := mustCreate(t, s, "jobs/a", []byte("hello"))
	wantRecord(t, mustGet(t, s, "jobs/a"), "jobs/a", []byte("hello"), rev)
}

func testCreateExisting(t *testing.T, s storage.Store) {
	rev := mustCreate(t, s, "k", []byte("one"))
	_, err := s.Create(ctxT(t), "k", []byte("two"))
	wantErr(t, "second Create of the same key", err, storage.ErrExists)
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("one"), rev)
}

func testEmptyValue(t *testing.T, s storage.Store) {
	rev := mustCreate(t, s, "empty", nil)
	r := mustGet(t, s, "empty")
	if len(r.Value) != 0 || r.Revision != rev {
		t.Fatalf("Get of an empty value = %q rev %d, want empty rev %d", r.Value, r.Revision, rev)
	}
	rev2, err := s.Update(ctxT(t), "empty", []byte{}, rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("Update to an empty value = %d, %v; want revision > %d", rev2, err, rev)
	}
}

func testUpdateCAS(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	rev1 := mustCreate(t, s, "k", []byte("v1"))
	rev2, err := s.Update(ctx, "k", []byte("v2"), rev1)
	if err != nil {
		t.Fatalf("Update at the current revision: %v", err)
	}
	if rev2 <= rev1 {
		t.Fatalf("Update returned revision %d, want > %d", rev2, rev1)
	}
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("v2"), rev2)
	_, err = s.Update(ctx, "k", []byte("stale"), rev1)
	wantErr(t, "Update at a stale revision", err, storage.ErrConflict)
	_, err = s.Update(ctx, "k", []byte("zero"), 0)
	wantErr(t, "Update at revision 0", err, storage.ErrConflict)
	_, err = s.Update(ctx, "k", []byte("future"), rev2+1000)
	wantErr(t, "Update at a future revision", err, storage.ErrConflict)
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("v2"), rev2)
}

func testUpdateMissing(t *testing.T, s storage.Store) {
	_, err := s.Update(ctxT(t), "missing", []byte("v"), 1)
	wantErr(t, "Update of a missing key", err, storage.ErrNotFound)
	_, err = s.Get(ctxT(t), "missing")
	wantErr(t, "Get after a failed Update", err, storage.ErrNotFound)
}

func testDeleteConditional(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	rev1 := mustCreate(t, s, "k", []byte("v1"))
	rev2, err := s.Update(ctx, "k", []byte("v2"), rev1)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Delete at a stale revision", s.Delete(ctx, "k", rev1), storage.ErrConflict)
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("v2"), rev2)
	if err := s.Delete(ctx, "k", rev2); err != nil {
		t.Fatalf("Delete at the current revision: %v", err)
	}
	_, err = s.Get(ctx, "k")
	wantErr(t, "Get after Delete", err, storage.ErrNotFound)
}

func testDeleteUnconditional(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	rev := mustCreate(t, s, "k", []byte("v1"))
	if _, err := s.Update(ctx, "k", []byte("v2"), rev); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k", 0); err != nil {
		t.Fatalf("Delete with revision 0: %v", err)
	}
	_, err := s.Get(ctx, "k")
	wantErr(t, "Get after Delete", err, storage.ErrNotFound)
	if recs, err := s.List(ctx, ""); err != nil || len(recs) != 0 {
		t.Fatalf("List after Delete = %v, %v; want nothing", recs, err)
	}
}

func testDeleteMissing(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	wantErr(t, "unconditional Delete of a missing key", s.Delete(ctx, "missing", 0), storage.ErrNotFound)
	wantErr(t, "conditional Delete of a missing key", s.Delete(ctx, "missing", 5), storage.ErrNotFound)
	rev := mustCreate(t, s, "k", []byte("v"))
	if err := s.Delete(ctx, "k", rev); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "second Delete", s.Delete(ctx, "k", 0), storage.ErrNotFound)
}

func testRecreateAfterDelete(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	rev1 := mustCreate(t, s, "k", []byte("v1"))
	if err := s.Delete(ctx, "k", rev1); err != nil {
		t.Fatal(err)
	}
	_, err := s.Update(ctx, "k", []byte("v"), rev1)
	wantErr(t, "Update of a deleted key", err, storage.ErrNotFound)
	rev2 := mustCreate(t, s, "k", []byte("v2"))
	if rev2 <= rev1 {
		t.Fatalf("re-Create returned revision %d, want > %d", rev2, rev1)
	}
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("v2"), rev2)
}

func testRevisionsIncreasing(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	var last int64
	next := func(what string, rev int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if rev <= last {
			t.Fatalf("%s returned revision %d after %d; revisions must be store-wide strictly increasing", what, rev, last)
		}
		last = rev
	}
	for i := range 5 {
		revA, err := s.Create(ctx, fmt.Sprintf("a/%d", i), []byte("x"))
		next("Create", revA, err)
		rev, err := s.Create(ctx, fmt.Sprintf("b/%d", i), []byte("x"))
		next("Create", rev, err)
		rev, err = s.Update(ctx, fmt.Sprintf("a/%d", i), []byte("y"), revA)
		next("Update", rev, err)
		if err := s.Delete(ctx, fmt.Sprintf("b/%d", i), 0); err != nil {
			t.Fatal(err)
		}
	}
	// A write after deletes still gets a larger revision.
	rev, err := s.Create(ctx, "c", []byte("x"))
	next("Create after deletes", rev, err)
}

func testListPrefix(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	keys := []string{"jobs/b", "jobs/a", "jobs/a/x", "jobsx", "job", "locks/a", "jobs/c"}
	revs := map[string]int64{}
	for _, k := range keys {
		revs[k] = mustCreate(t, s, k, []byte("v:"+k))
	}
	check := func(prefix string, want ...string) {
		t.Helper()
		recs, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Key)
			if string(r.Value) != "v:"+r.Key || r.Revision != revs[r.Key] {
				t.Fatalf("List(%q) returned %q = %q rev %d, want %q rev %d", prefix, r.Key, r.Value, r.Revision, "v:"+r.Key, revs[r.Key])
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("List(%q) keys = %q, want %q (sorted by key)", prefix, got, want)
		}
	}
	check("jobs/", "jobs/a", "jobs/a/x", "jobs/b", "jobs/c")
	check("jobs", "jobs/a", "jobs/a/x", "jobs/b", "jobs/c", "jobsx")
	check("", "job", "jobs/a", "jobs/a/x", "jobs/b", "jobs/c", "jobsx", "locks/a")
	check("nothing/")
	check("jobs/a", "jobs/a", "jobs/a/x")
	if err := s.Delete(ctx, "jobs/b", 0); err != nil {
		t.Fatal(err)
	}
	check("jobs/", "jobs/a", "jobs/a/x", "jobs/c")
}

// testListWildcards catches backends that build a LIKE or GLOB pattern from
// the prefix without escaping it.
func testListWildcards(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	for _, k := range []string{"a%b/1", "axb/1", "a_b/1", "ayb/1", `a\b/1`, "a*b/1", "a[b/1", "a'b/1", "aé/1", "a\U0001F600/1", "a~/1"} {
		mustCreate(t, s, k, []byte(k))
	}
	for prefix, want := range map[string]string{
		"a%":          "a%b/1",
		"a_":          "a_b/1",
		`a\`:          `a\b/1`,
		"a*":          "a*b/1",
		"a[":          "a[b/1",
		"a'":          "a'b/1",
		"aé":          "aé/1",
		"a\U0001F600": "a\U0001F600/1",
		"a~":          "a~/1",
	} {
		recs, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		if len(recs) != 1 || recs[0].Key != want {
			var got []string
			for _, r := range recs {
				got = append(got, r.Key)
			}
			t.Fatalf("List(%q) = %q, want only %q", prefix, got, want)
		}
	}
}

func testLargeValues(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	for _, size := range []int{1 << 20, storage.MaxValueSize} {
		v := make([]byte, size)
		for i := range v {
			v[i] = byte(i*7 + i>>11)
		}
		key := fmt.Sprintf("big/%d", size)
		rev := mustCreate(t, s, key, v)
		wantRecord(t, mustGet(t, s, key), key, v, rev)
		v[0]++
		rev2, err := s.Update(ctx, key, v, rev)
		if err != nil {
			t.Fatalf("Update of a %d-byte value: %v", size, err)
		}
		wantRecord(t, mustGet(t, s, key), key, v, rev2)
	}
	recs, err := s.List(ctx, "big/")
	if err != nil || len(recs) != 2 || len(recs[0].Value) != 1<<20 || len(recs[1].Value) != storage.MaxValueSize {
		t.Fatalf("List of large values: %d records, %v", len(recs), err)
	}
}

func testValueTooLarge(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	big := make([]byte, storage.MaxValueSize+1)
	_, err := s.Create(ctx, "big", big)
	wantErr(t, "Create of a too-large value", err, storage.ErrValueTooLarge)
	rev := mustCreate(t, s, "k", []byte("small"))
	_, err = s.Update(ctx, "k", big, rev)
	wantErr(t, "Update to a too-large value", err, storage.ErrValueTooLarge)
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("small"), rev)
	_, err = s.Get(ctx, "big")
	wantErr(t, "Get after a rejected Create", err, storage.ErrNotFound)
}

func testInvalidKeys(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	for name, key := range map[string]string{
		"empty":       "",
		"NUL":         "a\x00b",
		"newline":     "a\nb",
		"DEL":         "a\x7fb",
		"invalid UTF": "a\xffb",
		"too long":    strings.Repeat("k", storage.MaxKeyLen+1),
	} {
		_, err := s.Create(ctx, key, []byte("v"))
		wantErr(t, "Create with "+name+" key", err, storage.ErrInvalidKey)
		if name != "empty" && !strings.Contains(err.Error(), "invalid key") {
			t.Fatalf("Create with %s key: error %q does not say the key is invalid", name, err)
		}
		_, err = s.Get(ctx, key)
		wantErr(t, "Get with "+name+" key", err, storage.ErrInvalidKey)
		_, err = s.Update(ctx, key, []byte("v"), 1)
		wantErr(t, "Update with "+name+" key", err, storage.ErrInvalidKey)
		wantErr(t, "Delete with "+name+" key", s.Delete(ctx, key, 0), storage.ErrInvalidKey)
	}
	if recs, err := s.List(ctx, ""); err != nil || len(recs) != 0 {
		t.Fatalf("List after invalid writes = %d records, %v; want none", len(recs), err)
	}
}

func testLongKeys(t *testing.T, s storage.Store) {
	for _, key := range []string{
		strings.Repeat("k", storage.MaxKeyLen),
		strings.Repeat("é", storage.MaxKeyLen/2),
		"boot/\u65e5\u672c/ serial with spaces & 'quotes' \"dq\"",
	} {
		rev := mustCreate(t, s, key, []byte(key))
		wantRecord(t, mustGet(t, s, key), key, []byte(key), rev)
	}
}

func testCancelledContext(t *testing.T, s storage.Store) {
	rev := mustCreate(t, s, "k", []byte("v"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Get(ctx, "k")
	wantErr(t, "Get with a cancelled context", err, context.Canceled)
	_, err = s.Create(ctx, "new", []byte("v"))
	wantErr(t, "Create with a cancelled context", err, context.Canceled)
	_, err = s.Update(ctx, "k", []byte("changed"), rev)
	wantErr(t, "Update with a cancelled context", err, context.Canceled)
	wantErr(t, "Delete with a cancelled context", s.Delete(ctx, "k", rev), context.Canceled)
	_, err = s.List(ctx, "")
	wantErr(t, "List with a cancelled context", err, context.Canceled)
	// Nothing changed.
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("v"), rev)
	_, err = s.Get(ctxT(t), "new")
	wantErr(t, "Get of a key created with a cancelled context", err, storage.ErrNotFound)
}

func testNotAliased(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	in := []byte("original")
	rev := mustCreate(t, s, "k", in)
	copy(in, "XXXXXXXX")
	r := mustGet(t, s, "k")
	wantRecord(t, r, "k", []byte("original"), rev)
	copy(r.Value, "YYYYYYYY")
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("original"), rev)
	recs, err := s.List(ctx, "")
	if err != nil || len(recs) != 1 {
		t.Fatalf("List: %v, %v", recs, err)
	}
	copy(recs[0].Value, "ZZZZZZZZ")
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("original"), rev)
	up := []byte("updated!")
	rev2, err := s.Update(ctx, "k", up, rev)
	if err != nil {
		t.Fatal(err)
	}
	copy(up, "WWWWWWWW")
	wantRecord(t, mustGet(t, s, "k"), "k", []byte("updated!"), rev2)
	// Appending to a returned value must not write into another's array.
	a, b := mustGet(t, s, "k"), mustGet(t, s, "k")
	_ = append(a.Value[:1], "QQQQQQQ"...)
	if string(b.Value) != "updated!" {
		t.Fatalf("two Gets share memory: %q", b.Value)
	}
}

func testConcurrentCreate(t *testing.T, s storage.Store) {
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Create(ctxT(t), "k", []byte(fmt.Sprint(i)))
		}()
	}
	wg.Wait()
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
		case errors.Is(err, storage.ErrExists):
		default:
			t.Fatalf("Create #%d: %v", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d concurrent Creates of one key succeeded, want exactly 1", winners)
	}
}

// testConcurrentUpdate runs read-modify-write increments from many
// goroutines on one key and checks that exactly one Update wins each
// revision and no increment is lost.
func testConcurrentUpdate(t *testing.T, s storage.Store) {
	const workers, incs = 8, 25
	ctx := ctxT(t)
	mustCreate(t, s, "counter", []byte("0"))
	var mu sync.Mutex
	winsFrom := map[int64]int{} // revision updated from -> successful Updates
	newRevs := map[int64]bool{}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < incs; {
				r, err := s.Get(ctx, "counter")
				if err != nil {
					errc <- err
					return
				}
				var n int
				if _, err := fmt.Sscan(string(r.Value), &n); err != nil {
					errc <- fmt.Errorf("counter value %q: %w", r.Value, err)
					return
				}
				rev, err := s.Update(ctx, "counter", []byte(fmt.Sprint(n+1)), r.Revision)
				if errors.Is(err, storage.ErrConflict) {
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				done++
				mu.Lock()
				winsFrom[r.Revision]++
				if newRevs[rev] {
					errc <- fmt.Errorf("revision %d returned to two Updates", rev)
				}
				newRevs[rev] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for rev, n := range winsFrom {
		if n != 1 {
			t.Fatalf("%d Updates succeeded from revision %d, want exactly 1", n, rev)
		}
	}
	r := mustGet(t, s, "counter")
	if string(r.Value) != fmt.Sprint(workers*incs) {
		t.Fatalf("counter = %s after %d successful increments: lost updates", r.Value, workers*incs)
	}
}

func testConcurrentManyKeys(t *testing.T, s storage.Store) {
	const workers, keys = 8, 20
	ctx := ctxT(t)
	var mu sync.Mutex
	all := map[int64]string{}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int64
			for i := range keys {
				key := fmt.Sprintf("w%d/k%02d", w, i)
				rev, err := s.Create(ctx, key, []byte("1"))
				if err == nil {
					if rev <= last {
						err = fmt.Errorf("%s: revision %d after this goroutine's %d", key, rev, last)
					}
					last = rev
				}
				if err == nil {
					var rev2 int64
					rev2, err = s.Update(ctx, key, []byte("2"), rev)
					if err == nil && rev2 <= rev {
						err = fmt.Errorf("%s: Update revision %d after %d", key, rev2, rev)
					}
					mu.Lock()
					for _, r := range []int64{rev, rev2} {
						if other, dup := all[r]; dup {
							err = fmt.Errorf("revision %d given to %s and %s", r, other, key)
						}
						all[r] = key
					}
					mu.Unlock()
					last = rev2
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	recs, err := s.List(ctx, "")
	if err != nil || len(recs) != workers*keys {
		t.Fatalf("List = %d records, %v; want %d", len(recs), err, workers*keys)
	}
	for _, r := range recs {
		if string(r.Value) != "2" {
			t.Fatalf("%s = %q, want 2", r.Key, r.Value)
		}
	}
}

// testListUnderWrites lists while a writer creates keys in ascending order,
// others keep updating a fixed set, and one moves a token between two keys
// (create the other, then delete this one). Each List must be a snapshot:
// sorted, no duplicates, every fixed key present, the created keys a
// gap-free run (seeing key n without key n-1 means the list was not
// consistent), and at least one token key (a scan that passes the first
// token key's position before it is created and reaches the second after it
// is deleted sees none).
func testListUnderWrites(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	const fixed, created, minLists = 5, 60, 300
	for i := range fixed {
		mustCreate(t, s, fmt.Sprintf("l/fixed/%d", i), []byte("0"))
	}
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	var wg sync.WaitGroup
	defer func() { halt(); wg.Wait() }() // also when a check fails
	errc := make(chan error, 8)
	createdAll := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(createdAll)
		for i := range created {
			if _, err := s.Create(ctx, fmt.Sprintf("l/new/%04d", i), []byte("x")); err != nil {
				errc <- err
				return
			}
		}
	}()
	mustCreate(t, s, "l/tok/a", []byte("token"))
	// A stable key between the two token positions: a cursor scan can stand
	// on it while the token moves from "z" to "a" behind it.
	mustCreate(t, s, "l/tok/m", []byte("not a token"))
	wg.Add(1)
	go func() {
		defer wg.Done()
		cur, other := "l/tok/a", "l/tok/z"
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := s.Create(ctx, other, []byte("token"))
			if err == nil {
				err = s.Delete(ctx, cur, 0)
			}
			if err != nil {
				errc <- err
				return
			}
			cur, other = other, cur
		}
	}()
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("l/fixed/%d", (n+w)%fixed)
				r, err := s.Get(ctx, key)
				if err == nil {
					_, err = s.Update(ctx, key, []byte(fmt.Sprint(n)), r.Revision)
				}
				if err != nil && !errors.Is(err, storage.ErrConflict) {
					errc <- err
					return
				}
			}
		}()
	}
	// List until the creator is done and at least minLists lists ran while
	// the others kept writing, so a torn scan has a chance to show on fast
	// stores too.
	lists := 0
	for done := false; !done; {
		select {
		case <-createdAll:
			if lists >= minLists {
				halt()
				done = true
			}
		default:
		}
		recs, err := s.List(ctx, "l/")
		if err != nil {
			t.Fatalf("List under writes: %v", err)
		}
		lists++
		var keys []string
		fixedSeen, newSeen, tokens := 0, 0, 0
		for _, r := range recs {
			keys = append(keys, r.Key)
			switch {
			case strings.HasPrefix(r.Key, "l/fixed/"):
				fixedSeen++
			case r.Key == "l/tok/m":
			case strings.HasPrefix(r.Key, "l/tok/"):
				tokens++
			case r.Key != fmt.Sprintf("l/new/%04d", newSeen):
				t.Fatalf("List under writes returned %s without the keys created before it (got %d earlier ones): not a consistent snapshot", r.Key, newSeen)
			default:
				newSeen++
			}
		}
		if !sort.StringsAreSorted(keys) {
			t.Fatalf("List under writes not sorted: %q", keys)
		}
		if fixedSeen != fixed {
			t.Fatalf("List under writes saw %d of the %d always-present keys", fixedSeen, fixed)
		}
		if tokens == 0 {
			t.Fatalf("List under writes saw neither token key, but one always exists: not a consistent snapshot")
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	t.Logf("%d consistent lists during writes", lists)
}
