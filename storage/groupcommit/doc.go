// Package groupcommit lets concurrent writers share commits: every write
// that arrives while a commit is in flight goes into the next one, so a
// store pays one fsync (bbolt) or one WAL flush (PostgreSQL) per batch
// instead of one per write, and a lone writer commits at once.
//
// # Protocol
//
// The first writer to arrive while nobody commits becomes the leader: it
// takes every queued write into one batch, runs the store's commit function
// on it, and hands the leadership to the first write queued meanwhile.
// Queued writers whose ctx ends before a leader took them leave without
// writing; once taken, a write's outcome is whatever the commit function
// decided.
package groupcommit
