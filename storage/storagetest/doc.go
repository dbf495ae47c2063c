// Package storagetest is the conformance suite for [storage.Store]
// implementations, bmckit's own backends and users' alike.
//
// # Usage
//
//	func TestStore(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Store {
//			return mystore.New(...) // a fresh, empty store per subtest
//		})
//	}
//
// The factory is called once per subtest and must return an empty store;
// register cleanup with t.Cleanup. Subtest names are stable, so one check can
// be run alone with go test -run 'TestStore/ConcurrentUpdateOneKey'.
//
// # What it checks
//
// CRUD semantics and the sentinel errors, compare-and-swap under many
// concurrent writers on one key (exactly one wins each revision), store-wide
// strictly increasing revisions, list by prefix (including SQL wildcard
// characters in prefixes) and list consistency under concurrent writes,
// conditional and unconditional deletes, values up to [storage.MaxValueSize],
// invalid keys, cancelled contexts and value aliasing.
//
// # Benchmarks
//
// [BenchUpdate], [BenchUpdateParallel] and [BenchGet] are the store-side
// loops of bmckit's own storage benchmarks (docs/benchmarks.md); call them
// from a Benchmark function to measure a Store of your own the same way.
//
// # Optional capabilities
//
// Subtests under ChangeFeed/ run when the store implements
// [storage.ChangeFeed] and skip with a message otherwise; the ones under
// Compactor/ need [storage.Compactor]. Follower/ runs for every store.
// [CheckAutoCompaction] is a separate check for stores configured to forget
// old tombstones by themselves.
package storagetest
