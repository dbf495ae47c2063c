// Package boltstore is bmckit's embedded durable [storage.Store]: one file
// on local disk, kept with go.etcd.io/bbolt. It is the default for a single
// process; use storage/sqlstore when several replicas share state.
//
// # Durability
//
// Every Create, Update and Delete runs in a bbolt read-write transaction,
// and bbolt fsyncs the file (fdatasync on Linux) before the commit returns,
// so a write is on disk when the call returns. Writes that arrive while a
// commit is flushing are committed together in the next transaction (group
// commit: one fsync for all of them, each still checked and applied in
// order); a lone writer commits at once. Values are copied out of
// transactions, never returned as pointers into the memory-mapped file.
//
// # Locking
//
// bbolt takes an exclusive flock on the file. [Open] waits at most
// [Options.LockTimeout] for it and then fails with an error wrapping
// [ErrLocked] ("locked by another process"), instead of hanging while
// another process (or another Open in this one) holds the file.
//
// # Layout
//
// Bucket "kv" maps each key to an 8-byte big-endian revision, a flag byte
// (1 = deleted) and the value; bucket "revs" maps each write's revision to
// the key, which makes the [storage.ChangeFeed] a range scan (an entry
// superseded by a later write of its key is skipped, and removed by a
// pruning pass every 4096 writes: docs/storage.md, "Layout 2"); bucket
// "meta" holds the store-wide revision counter, the compaction and prune
// points and the layout version (2; a version-1 file is upgraded in place
// at Open, and older versions of this package refuse a version-2 file).
//
// # Compaction
//
// Two different things are called compaction here. Deleted keys stay as
// tombstones so the change feed can report deletes; [Store.Compact] (the
// [storage.Compactor] capability) forgets tombstones up to a revision. The
// store calls it by itself every 256 deletes, keeping the last
// [Options.TombstoneRevisions] revisions (100000 by default); a change-feed
// reader further behind than that gets storage.ErrCompacted and re-lists. Neither that nor bbolt itself ever
// shrinks the file: freed pages are reused by later writes. To give disk
// space back, stop the process and rewrite the file with bbolt's compactor
// (`bbolt compact -o new.db old.db` from go.etcd.io/bbolt/cmd/bbolt, or
// bbolt.Compact in Go), then replace the old file. Correctness never
// depends on either.
package boltstore
