package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
		err := s.DB().View(func(tx *bolt.Tx) error {
			kv = tx.Bucket([]byte("kv")).Stats().KeyN
			revs = tx.Bucket([]byte("revs")).Stats().KeyN
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
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
			t.Fatalf("round %d: after Compact(%d) the file holds %d keys and %d revisions; want %d of each (every tombstone forgotten)", round, head, kv, revs, want)
		}
	}
}
