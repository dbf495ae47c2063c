package childtest_test

import (
	"testing"

	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

// The pattern: the same test function is the parent and, re-executed, the
// child. Here the child writes to a store and acknowledges each write on
// stdout; a crash test would kill it mid-stream and check that every
// acknowledged write survived (with a durable store, not memstore).
func Example() {
	_ = func(t *testing.T) { // func TestCrashDurability(t *testing.T)
		if childtest.IsChild("writer") {
			childtest.WriteAcked(memstore.New())
			return
		}
		child := childtest.Start(t, "TestCrashDurability", "writer")
		_ = child // read child.Lines, kill it, reopen the store, compare
	}
}
