package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

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
