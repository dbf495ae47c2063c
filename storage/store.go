package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Errors every Store returns (wrapped is fine; callers use errors.Is).
var (
	// ErrNotFound: no record under the key.
	ErrNotFound = errors.New("storage: record not found")
	// ErrExists: Create found a record already under the key.
	ErrExists = errors.New("storage: record already exists")
	// ErrConflict: the record's revision is not the one the caller expected
	// (someone else wrote it first). Re-read and retry.
	ErrConflict = errors.New("storage: revision conflict")
	// ErrInvalidKey: the key breaks the rules of [ValidateKey].
	ErrInvalidKey = errors.New("storage: invalid key")
	// ErrValueTooLarge: the value exceeds [MaxValueSize].
	ErrValueTooLarge = errors.New("storage: value too large")
	// ErrOutcomeUnknown: the write reached the backend but its answer was
	// lost (the ctx ended or the connection broke around the commit), so it
	// may or may not have been applied. Re-read before retrying; a
	// compare-and-swap retry of an applied write fails with ErrConflict.
	ErrOutcomeUnknown = errors.New("storage: write outcome unknown (it may have been applied); re-read before retrying")
)

// MaxKeyLen is the longest key a Store must accept, in bytes.
const MaxKeyLen = 512

// MaxValueSize is the largest value a Store must accept, in bytes.
const MaxValueSize = 4 << 20

// Record is one stored value and its revision.
type Record struct {
	Key   string
	Value []byte
	// Revision is assigned by the store on every write. Revisions are
	// strictly increasing across the whole store (not only per key), so a
	// later write always has a larger revision than an earlier one.
	Revision int64
}

// Store is a small versioned key-value contract. bmckit keeps jobs, BMC locks
// and boot records in it as opaque bytes; hosts may plug in their own.
//
// All methods must be safe for concurrent use by several goroutines (and, for
// shared backends, several processes), must honour ctx, and must return the
// errors above (wrapped is fine). A write is acknowledged only once it is
// durable for the backend's promise (memory for memstore, disk for the
// others). Values passed in and returned are never retained or shared: the
// store copies them.
type Store interface {
	// Get returns the record under key, or ErrNotFound.
	Get(ctx context.Context, key string) (Record, error)

	// Create stores a new record and returns its revision, or ErrExists if
	// the key is taken.
	Create(ctx context.Context, key string, value []byte) (int64, error)

	// Update replaces the value if the record's current revision equals
	// revision (compare-and-swap) and returns the new revision. It returns
	// ErrNotFound if there is no record and ErrConflict if the revision
	// differs.
	Update(ctx context.Context, key string, value []byte, revision int64) (int64, error)

	// Delete removes the record if its revision equals revision, or
	// unconditionally when revision is 0. It returns ErrNotFound if there is
	// no record and ErrConflict if the revision differs.
	Delete(ctx context.Context, key string, revision int64) error

	// List returns every record whose key starts with prefix, sorted by key.
	// An empty prefix lists everything.
	List(ctx context.Context, prefix string) ([]Record, error)
}

// ValidateKey checks the key rules every Store enforces: non-empty, at most
// MaxKeyLen bytes, valid UTF-8, no NUL or other control characters. The
// error wraps ErrInvalidKey and names the key (quoted, truncated).
func ValidateKey(key string) error {
	bad := func(why string) error {
		k := key
		if len(k) > 64 {
			k = k[:64] + "..."
		}
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, k, why)
	}
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return bad(fmt.Sprintf("%d bytes, at most %d allowed", len(key), MaxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return bad("contains a control character")
	}
	return nil
}

// ValidateValue checks the value size limit. The error wraps ErrValueTooLarge.
func ValidateValue(key string, value []byte) error {
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: %q has %d bytes, at most %d allowed", ErrValueTooLarge, key, len(value), MaxValueSize)
	}
	return nil
}
