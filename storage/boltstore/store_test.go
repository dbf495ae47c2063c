package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/storagetest"
)

func open(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStore(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, filepath.Join(t.TempDir(), "bmckit.db"))
	})
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bmckit.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Create(ctx, "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k", rev); err != nil {
		t.Fatal(err)
	}
	rev2, err := s.Create(ctx, "k2", []byte("v2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	r, err := s.Get(ctx, "k2")
	if err != nil || string(r.Value) != "v2" || r.Revision != rev2 {
		t.Fatalf("after reopen Get = %+v, %v", r, err)
	}
	if _, err := s.Get(ctx, "k"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted key after reopen: %v", err)
	}
	rev3, err := s.Create(ctx, "k3", nil)
	if err != nil || rev3 <= rev2 {
		t.Fatalf("revision after reopen = %d, %v; want > %d", rev3, err, rev2)
	}
}

func TestSecondOpenFailsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bmckit.db")
	open(t, path)
	_, err := boltstore.Open(path, boltstore.Options{LockTimeout: -1})
	if !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	t.Log(err)
}

func TestAutomaticCompaction(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "ac.db"), boltstore.Options{TombstoneRevisions: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storagetest.CheckAutoCompaction(t, s, 10)
}

// TestCompactionsForgetEveryTombstone compacts again and again while live
// keys stay at old revisions and others are rewritten, then deleted right
// after a compaction: each compaction reads only the revisions since the
// last one, and every tombstone must still be forgotten.
func TestCompactionsForgetEveryTombstone(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "compact.db"))
	count := func() (kv, revs int) {
		t.Helper()
		kv, revs = countEntries(t, s)
		return kv, revs
	}
	const live = 50
	for i := range live {
		if _, err := s.Create(ctx, fmt.Sprintf("live/%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	revOf := map[string]int64{}
	for round := range 20 {
		// The keys of the last round go first: their tombstones open the
		// window the next compaction reads.
		for k, rev := range revOf {
			if err := s.Delete(ctx, k, rev); err != nil {
				t.Fatal(err)
			}
			delete(revOf, k)
		}
		for i := range 10 {
			k := fmt.Sprintf("gone/%d/%d", round, i)
			rev, err := s.Create(ctx, k, []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				if rev, err = s.Update(ctx, k, []byte("y"), rev); err != nil {
					t.Fatal(err)
				}
			}
			revOf[k] = rev
		}
		head, err := s.Create(ctx, fmt.Sprintf("head/%d", round), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Compact(ctx, head); err != nil {
			t.Fatal(err)
		}
		kv, revs := count()
		want := live + round + 1 + len(revOf) // live keys, head markers, this round's keys
		if kv != want || revs != want {
			t.Fatalf("round %d: after Compact(%d) the file holds %d keys and %d current revision entries; want %d of each (every tombstone forgotten)", round, head, kv, revs, want)
		}
	}
}

// countEntries counts the keys of the kv bucket (tombstones included) and
// the revs entries that are their key's current one (not superseded).
func countEntries(t *testing.T, s *boltstore.Store) (kv, current int) {
	t.Helper()
	err := s.DB().View(func(tx *bolt.Tx) error {
		kvb := tx.Bucket([]byte("kv"))
		kv = kvb.Stats().KeyN
		return tx.Bucket([]byte("revs")).ForEach(func(rk, key []byte) error {
			if v := kvb.Get(key); len(v) >= 8 && bytes.Equal(v[:8], rk) {
				current++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return kv, current
}

func revsEntries(t *testing.T, s *boltstore.Store) (n int) {
	t.Helper()
	if err := s.DB().View(func(tx *bolt.Tx) error { n = tx.Bucket([]byte("revs")).Stats().KeyN; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// The revs index keeps superseded entries only until the next prune pass
// that reaches them: records rewritten again and again (a running job's)
// leave at most about pruneLag + pruneEvery entries behind, and the change
// feed answers as if there were none.
func TestPruneBoundsTheIndex(t *testing.T) {
	const every, lag = 16, 32
	defer boltstore.SetPruning(every, lag, 1000)()
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "prune.db"))
	const keys = 20
	revs := make([]int64, keys)
	for i := range revs {
		var err error
		if revs[i], err = s.Create(ctx, fmt.Sprintf("jobs/%02d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	mid := int64(0)
	for round := range 50 {
		for i := range revs {
			var err error
			if revs[i], err = s.Update(ctx, fmt.Sprintf("jobs/%02d", i), []byte(fmt.Sprint(round)), revs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if round == 40 {
			mid = revs[keys-1]
		}
		if n := revsEntries(t, s); n > keys+lag+every {
			t.Fatalf("round %d: the revs index holds %d entries for %d keys; want at most %d", round, n, keys, keys+lag+every)
		}
	}
	if _, cur := countEntries(t, s); cur != keys {
		t.Fatalf("%d current entries for %d keys", cur, keys)
	}
	// The feed from the start: each key once, at its current revision.
	ch, err := s.Changes(ctx, "jobs/", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Events) != keys {
		t.Fatalf("Changes(0) = %d events; want %d (one per key)", len(ch.Events), keys)
	}
	for i, ev := range ch.Events {
		if ev.Key != fmt.Sprintf("jobs/%02d", i) || ev.Revision != revs[i] || string(ev.Value) != "49" {
			t.Fatalf("event %d = %s at %d (%q); want jobs/%02d at %d", i, ev.Key, ev.Revision, ev.Value, i, revs[i])
		}
	}
	// From the middle, in pages of 3: the keys written after it, in order.
	var got []int64
	for since := mid; ; {
		ch, err := s.Changes(ctx, "jobs/", since, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range ch.Events {
			got = append(got, ev.Revision)
		}
		if len(ch.Events) == 0 {
			break
		}
		since = ch.Revision
	}
	if len(got) != keys || got[0] <= mid {
		t.Fatalf("Changes since %d in pages = %v; want the %d keys' current revisions", mid, got, keys)
	}
}

// The conformance suite with a prune pass every few writes.
func TestStorePruningOften(t *testing.T) {
	defer boltstore.SetPruning(4, 8, 3)()
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, filepath.Join(t.TempDir(), "bmckit.db"))
	})
}

// A file of layout 1 (one revs entry per key) opens as layout 2 with its
// prune point at its revision: its old entries are deleted by the writes
// that supersede them, as layout 1 did, and the feed answers the same.
func TestLayoutOneUpgraded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	revs := map[string]int64{}
	for i := range 10 {
		k := fmt.Sprintf("jobs/%d", i)
		if revs[k], err = s.Create(ctx, k, []byte("v1")); err != nil {
			t.Fatal(err)
		}
	}
	// Made a layout-1 file: version 1, no prune point.
	err = s.DB().Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		if err := meta.Delete([]byte("pruned")); err != nil {
			return err
		}
		return meta.Put([]byte("version"), []byte{0, 0, 0, 0, 0, 0, 0, 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	for k, rev := range revs {
		if revs[k], err = s.Update(ctx, k, []byte("v2"), rev); err != nil {
			t.Fatal(err)
		}
	}
	if kv, n := countEntries(t, s); kv != 10 || n != 10 || revsEntries(t, s) != 10 {
		t.Fatalf("after the upgrade and an update of each key: %d keys, %d current and %d revs entries; want 10 of each (the old entries deleted by their writes)", kv, n, revsEntries(t, s))
	}
	var version []byte
	if err := s.DB().View(func(tx *bolt.Tx) error {
		version = bytes.Clone(tx.Bucket([]byte("meta")).Get([]byte("version")))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(version, []byte{0, 0, 0, 0, 0, 0, 0, 2}) {
		t.Fatalf("layout version after Open = %v, want 2", version)
	}
	ch, err := s.Changes(ctx, "jobs/", 0, 0)
	if err != nil || len(ch.Events) != 10 || string(ch.Events[0].Value) != "v2" {
		t.Fatalf("feed after the upgrade: %d events, %v", len(ch.Events), err)
	}
}

// A file of a newer layout is refused, naming both versions, and left as
// it was.
func TestNewerLayoutRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v9.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{0, 0, 0, 0, 0, 0, 0, 9})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = boltstore.Open(path, boltstore.Options{})
	if err == nil || !strings.Contains(err.Error(), "layout version 9") || !strings.Contains(err.Error(), "up to 2") {
		t.Fatalf("Open of a layout-9 file = %v; want a refusal naming versions 9 and 2", err)
	}
}
