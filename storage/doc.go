// Package storage defines the small versioned key-value [Store] that bmckit
// keeps its state in, and the errors every Store returns.
//
// Backends: storage/memstore (in memory, for tests), storage/boltstore (an
// embedded durable file, the default) and storage/sqlstore (PostgreSQL, for
// several replicas). storage/storagetest is the conformance suite any Store,
// including a user's own, must pass.
//
// # Contract
//
// Values are opaque bytes. Each write gets a revision from a store-wide,
// strictly increasing counter; Update and Delete are compare-and-swap on that
// revision. Keys are validated by [ValidateKey]. The interface never grows:
// optional capabilities are separate interfaces found by type assertion.
//
// # Optional capabilities
//
// [ChangeFeed] reports what changed under a prefix after a revision (a
// poll-since-revision feed, deletes included), and [Compactor] forgets the
// deletion markers the feed keeps. [Follower] gives the same events for any
// Store: it uses the feed when present and otherwise diffs successive
// listings. docs/storage.md explains the choice.
package storage
