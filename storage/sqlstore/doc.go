// Package sqlstore is a [storage.Store] in a SQL database through
// database/sql, for several replicas sharing one PostgreSQL database.
//
// # Drivers
//
// This package imports no driver. [New] takes a *sql.DB the caller opened
// with the PostgreSQL driver of its choice; the sub-package
// storage/sqlstore/postgres opens one with github.com/jackc/pgx/v5 from a
// DSN. SQLite is not supported yet.
//
// # Schema and migrations
//
// The tables live in [Options.Schema] with names starting with
// [Options.TablePrefix], so several stores (or test runs) can share one
// database. Versioned migrations are embedded in the binary and applied by
// New inside one transaction that holds a PostgreSQL advisory lock, so
// processes starting together do not race; a database migrated by a newer
// bmckit is refused with a clear error.
//
// # Revisions and concurrency
//
// Every write is one autocommit statement that increments the single counter
// row (taking its row lock) and changes the record with a compare-and-swap
// (UPDATE ... WHERE revision = $n). Holding the counter's lock until commit
// makes revisions commit in order: once a reader sees revision N, every
// smaller revision is visible too, which the change feed needs and which a
// plain SEQUENCE does not give (see docs/storage.md). The price is that
// writes to one store are serialized in the database; to keep concurrent
// writers from paying one WAL flush each, a process's writes that arrive
// while a commit is in flight run together in the next transaction (group
// commit). Revisions may have gaps (a compare-and-swap lost to a concurrent
// writer skips one).
//
// On a pgx connection a shared transaction's statements are sent together
// (three round trips whatever the batch's size; docs/storage.md,
// "Pipelined group commit"); other drivers send one statement per round
// trip. A shared transaction still spans several round trips, so a process stopped
// inside one (SIGSTOP, a frozen VM, a lost network) would hold the counter's
// lock, and with it every replica's writes, until it resumed. Each of the
// store's transactions therefore sets PostgreSQL's
// idle_in_transaction_session_timeout ([Options.IdleInTransactionTimeout],
// 5 s by default): PostgreSQL ends such a session and the others go on.
//
// # Change feed
//
// Store implements [storage.ChangeFeed] (an indexed range scan over the
// revision column) and [storage.Compactor] (deleting tombstones).
package sqlstore
