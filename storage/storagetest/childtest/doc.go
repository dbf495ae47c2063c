// Package childtest re-executes the running test binary as a child process,
// for tests that need a second OS process: crash durability (SIGKILL a
// writer mid-stream) and several processes racing on one store.
//
// # Pattern
//
// The test checks [IsChild] first and, in the child, does its work and
// returns; in the parent it calls [Start] with its own name, which runs the
// binary again with -test.run=^Name$ and the child environment variable set.
// The child reports progress as lines on stdout that the parent reads with
// [Child.Lines].
package childtest
