package storage

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoChange, returned by a [ModifyFunc], ends [Modify] without writing;
// Modify then returns the current record (zero Record when absent) and a nil
// error.
var ErrNoChange = errors.New("storage: no change")

// ModifyFunc computes a record's new value from its current one. cur is nil
// when the key is absent. It may be called several times (once per conflict)
// and must not have side effects beyond its return value. Return
// [ErrNoChange] to leave the record as it is; any other error ends [Modify]
// and is returned as is (unwrapped by Modify, so errors.Is works).
type ModifyFunc func(cur *Record) ([]byte, error)

// Modify reads key, calls fn, and writes its result with Create (absent) or
// a compare-and-swap Update; on ErrConflict, ErrExists or ErrNotFound (the
// record changed between read and write) and on ErrOutcomeUnknown (re-read:
// a compare-and-swap retry of an applied write conflicts, and fn sees the
// applied value) it re-reads and calls fn again, until ctx ends. It returns
// the record as written.
//
// The retry loop has no backoff and no attempt limit: every retry follows a
// write that someone else won (or that may have been applied), so progress
// is made store-wide, and only ctx bounds it. Pass a ctx with a deadline
// when the key may be rewritten continuously.
//
// Other store errors (a broken connection, an invalid key, a value too
// large) are returned at once, wrapped with the key, so the caller decides
// about retries. An error returned after an ErrOutcomeUnknown whose re-read
// failed (or whose ctx ended) wraps ErrOutcomeUnknown as well: the last
// write may have been applied. When ctx ends between retries, the error
// wraps ctx's error and the last store error.
func Modify(ctx context.Context, s Store, key string, fn ModifyFunc) (Record, error) {
	var last error    // the last retryable write error, for the ctx-ended message
	var unknown error // a write whose outcome is unknown and not yet re-read
	for {
		if last != nil {
			if err := ctx.Err(); err != nil {
				return Record{}, fmt.Errorf("modify %q: gave up retrying: %w: %w", key, err, last)
			}
		}
		cur, err := s.Get(ctx, key)
		var curp *Record
		switch {
		case err == nil:
			curp = &cur
		case errors.Is(err, ErrNotFound):
			cur = Record{}
		case unknown != nil:
			return Record{}, fmt.Errorf("modify %q: %w; re-reading it failed: %w", key, unknown, err)
		default:
			return Record{}, fmt.Errorf("modify %q: %w", key, err)
		}
		unknown = nil

		val, err := fn(curp)
		if errors.Is(err, ErrNoChange) {
			return cur, nil
		}
		if err != nil {
			return Record{}, err
		}

		var rev int64
		if curp == nil {
			rev, err = s.Create(ctx, key, val)
		} else {
			rev, err = s.Update(ctx, key, val, cur.Revision)
		}
		switch {
		case err == nil:
			return Record{Key: key, Value: val, Revision: rev}, nil
		case errors.Is(err, ErrOutcomeUnknown):
			unknown, last = err, err
		case errors.Is(err, ErrConflict), errors.Is(err, ErrExists), errors.Is(err, ErrNotFound):
			last = err
		default:
			return Record{}, fmt.Errorf("modify %q: %w", key, err)
		}
	}
}
