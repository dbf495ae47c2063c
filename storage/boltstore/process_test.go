//go:build linux

package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

const envPath = "BMCKIT_BOLTSTORE_TEST_PATH"

// TestCrashDurability SIGKILLs a child process that writes records and
// prints an acknowledgement after each write returns, then reopens the file
// and finds every acknowledged record. (SIGKILL does not lose the page
// cache, so this proves the acknowledgement comes after the commit; the
// fsync itself is bbolt's, on every commit.)
func TestCrashDurability(t *testing.T) {
	if childtest.IsChild("bolt-writer") {
		writerChild(os.Getenv(envPath))
		return
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	child := childtest.Start(t, "TestCrashDurability", "bolt-writer", envPath+"="+path)
	acked := child.KillAfterAcks(t, 150)
	s := open(t, path) // the dead child's lock is gone
	ctx := context.Background()
	for key, rev := range acked {
		r, err := s.Get(ctx, key)
		if err != nil {
			t.Fatalf("acknowledged record %s (revision %d) lost after SIGKILL: %v", key, rev, err)
		}
		if r.Revision < rev || !strings.HasPrefix(string(r.Value), key) {
			t.Fatalf("acknowledged record %s: got revision %d value %q, acknowledged revision %d", key, r.Revision, r.Value, rev)
		}
	}
	t.Logf("all %d acknowledged records survived SIGKILL", len(acked))
}

// writerChild creates records until killed, acknowledging each on stdout.
func writerChild(path string) {
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	childtest.WriteAcked(s)
}

// TestSecondProcessLocked opens the file in a child process and checks that
// Open in this process fails fast with ErrLocked instead of hanging.
func TestSecondProcessLocked(t *testing.T) {
	if childtest.IsChild("bolt-holder") {
		s, err := boltstore.Open(os.Getenv(envPath), boltstore.Options{})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("opened")
		time.Sleep(time.Minute) // hold the lock until the parent kills us
		_ = s.Close()
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "locked.db")
	child := childtest.Start(t, "TestSecondProcessLocked", "bolt-holder", envPath+"="+path)
	select {
	case l := <-child.Lines():
		if l != "opened" {
			t.Fatalf("child: %s", l)
		}
	case <-time.After(time.Minute):
		t.Fatal("child did not open the store")
	}
	_, err := boltstore.Open(path, boltstore.Options{LockTimeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("Open while another process holds the file = %v, want a 'locked by another process' error", err)
	}
	t.Log(err)
	child.Kill()
	s := open(t, path)
	if _, err := s.List(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
}
