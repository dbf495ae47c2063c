package storagetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/storage"
)

// CheckAutoCompaction checks a store configured to compact tombstones
// automatically, keeping them for keep revisions and checking every 256
// deletes (bmckit's boltstore and sqlstore with TombstoneRevisions set):
// after 256 deletes, the feed must report ErrCompacted for since 0 at a
// compaction point keep revisions behind the last delete, and Get and List
// must be unaffected.
func CheckAutoCompaction(t *testing.T, s storage.Store, keep int64) {
	t.Helper()
	f, ok := s.(storage.ChangeFeed)
	if !ok {
		t.Skipf("%T does not implement storage.ChangeFeed", s)
	}
	ctx := ctxT(t)
	live := mustCreate(t, s, "live", []byte("v"))
	for i := range 256 {
		key := fmt.Sprintf("gone/%03d", i)
		mustCreate(t, s, key, []byte("v"))
		if err := s.Delete(ctx, key, 0); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := f.Changes(ctx, "", 0, 0)
	var ce *storage.CompactedError
	if !errors.As(err, &ce) {
		t.Fatalf("Changes(since 0) after 256 deletes with automatic compaction: %v, %d events; want a *storage.CompactedError", err, len(ch.Events))
	}
	tail := mustChanges(t, f, "", ce.Compacted, 0)
	if len(tail.Events) == 0 || tail.Revision-ce.Compacted != keep {
		t.Fatalf("compacted to %d with head %d: want the last %d revisions kept", ce.Compacted, tail.Revision, keep)
	}
	wantRecord(t, mustGet(t, s, "live"), "live", []byte("v"), live)
	recs, err := s.List(ctx, "")
	if err != nil || len(recs) != 1 {
		t.Fatalf("List after compaction = %d records, %v; want 1", len(recs), err)
	}
}
