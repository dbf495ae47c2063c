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
package storage
