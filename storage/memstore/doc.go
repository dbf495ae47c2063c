// Package memstore is an in-memory [storage.Store] for tests and examples.
//
// # Guarantees
//
// A [Store] is safe for concurrent use, honours ctx (a cancelled context
// fails the call before it changes anything), copies every value in and out,
// and assigns store-wide strictly increasing revisions, deletes included.
// Nothing survives the process: use storage/boltstore for durability.
//
// # Change feed
//
// Store implements [storage.ChangeFeed] and [storage.Compactor]. Deleted keys
// are kept as tombstones until [Store.Compact] forgets them, so a long-lived
// memstore that deletes many keys should compact now and then.
package memstore
