// Package autocompact decides when a store forgets old deletion markers
// (tombstones) by itself, so that a store whose keys are deleted over and
// over does not grow without bound when nobody calls Compact.
//
// # Policy
//
// After every Every-th delete at revision rev, a store compacts up to
// rev - Keep: a change-feed reader more than Keep revisions behind gets
// storage.ErrCompacted and re-lists (storage.Follower does this by itself).
package autocompact

import "sync/atomic"

// DefaultKeep is the number of revisions a tombstone is kept by default.
const DefaultKeep = 100_000

// every is how many deletes pass between automatic compactions.
const every = 256

// Policy counts deletes and says when to compact. Safe for concurrent use.
type Policy struct {
	keep    int64
	deletes atomic.Int64
}

// New returns a policy keeping tombstones for keep revisions: 0 means
// DefaultKeep, a negative value never compacts.
func New(keep int64) *Policy {
	if keep == 0 {
		keep = DefaultKeep
	}
	return &Policy{keep: keep}
}

// AfterDelete records a delete at revision rev and returns the revision to
// compact to, or 0 when it is not time.
func (p *Policy) AfterDelete(rev int64) int64 {
	if p.keep < 0 || p.deletes.Add(1)%every != 0 || rev <= p.keep {
		return 0
	}
	return rev - p.keep
}
