package storagetest_test

import (
	"testing"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/storagetest"
)

// Run is called from a test of your own Store: each subtest gets a fresh,
// empty store from the factory. (Compiled, not run: the suite needs the
// *testing.T of a test function, as in memstore's own TestConformance.)
func ExampleRun() {
	testMyStore := func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Store {
			return memstore.New() // your store, opened empty for t
		})
	}
	_ = testMyStore // func TestMyStore(t *testing.T) { ... } in a _test.go file
}
