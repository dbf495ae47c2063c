package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/autocompact"
	"github.com/bmckit/bmckit/storage/groupcommit"
)

var (
	_ io.Closer            = (*Store)(nil)
	_ storage.Store        = (*Store)(nil)
	_ storage.ChangeFeed   = (*Store)(nil)
	_ storage.Compactor    = (*Store)(nil)
	_ storage.ValueSkipper = (*Store)(nil)
)

// ErrLocked is returned (wrapped) by Open when another process, or another
// Open in this one, holds the file.
var ErrLocked = errors.New("boltstore: database file is locked by another process")

// layoutVersion is stored in the meta bucket; Open refuses files written
// with a newer layout. Version 2 (issue 35) may keep superseded entries in
// the revs bucket above the prune point (see prune); version 1 kept exactly
// one entry per key, and Open upgrades such a file by setting the prune
// point to its current revision, without rewriting anything.
const layoutVersion = 2

// Pruning superseded revs entries (prune): every pruneEvery writes, a pass
// removes those at revisions up to pruneLag behind the head, at most
// maxPrunePass entries a pass. A record rewritten within pruneLag revisions
// (a running job's, every step) leaves its old entry to the pass, which
// removes entries that sit side by side on few pages, instead of deleting
// it on a random page of the index in the write itself.
var (
	pruneEvery   int64 = 4096
	pruneLag     int64 = 32768
	maxPrunePass       = 65536
)

var (
	bucketKV   = []byte("kv")
	bucketRevs = []byte("revs")
	bucketMeta = []byte("meta")

	metaRevision  = []byte("revision")
	metaCompacted = []byte("compacted")
	metaPruned    = []byte("pruned")
	metaVersion   = []byte("version")
)

const (
	flagLive    = 0
	flagDeleted = 1
	headerLen   = 9 // revision (8) + flag (1)
)

// Options configure Open. The zero value means defaults.
type Options struct {
	// LockTimeout is how long Open waits for the file lock held by another
	// process before failing with ErrLocked. Defaults to 1s; a negative
	// value means do not wait at all (one attempt).
	LockTimeout time.Duration
	// FileMode is the permission of a newly created file. Defaults to 0600.
	FileMode os.FileMode
	// TombstoneRevisions is how many revisions a deleted key is remembered
	// for the change feed before an automatic Compact forgets it (checked
	// every 256 deletes); a Follower further behind re-lists. Defaults to
	// 100000; a negative value leaves compaction to the caller.
	TombstoneRevisions int64
	// Logger receives open and compaction messages. Defaults to
	// logr.Discard().
	Logger logr.Logger
}

// Store is a storage.Store in one bbolt file. Safe for concurrent use.
type Store struct {
	db      *bolt.DB
	commits *groupcommit.Committer[writeFn]
	path    string
	log     logr.Logger
	compact *autocompact.Policy
	writes  atomic.Int64 // writes since Open, for prune
}

// Open opens or creates the store file at path.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.LockTimeout
	switch {
	case timeout == 0:
		timeout = time.Second
	case timeout < 0:
		// bbolt treats 0 as "wait forever"; the smallest positive timeout
		// still tries once.
		timeout = time.Nanosecond
	}
	mode := opts.FileMode
	if mode == 0 {
		mode = 0o600
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	db, err := bolt.Open(path, mode, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		waited := "gave up after " + timeout.String() + " waiting for the file lock"
		if opts.LockTimeout < 0 {
			waited = "the file lock is held (LockTimeout < 0: not waiting)"
		}
		return nil, fmt.Errorf("%w: open %s: %s; stop the other process or use another file", ErrLocked, path, waited)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketKV, bucketRevs, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		got := uint64(0) // a new file
		if v := meta.Get(metaVersion); v != nil {
			got = binary.BigEndian.Uint64(v)
		}
		switch {
		case got > layoutVersion:
			return fmt.Errorf("file has layout version %d, this bmckit understands up to %d", got, layoutVersion)
		case got == layoutVersion:
			return nil
		case got == 1:
			// One entry per key, none superseded: pruned up to here.
			if err := meta.Put(metaPruned, u64(uint64(getU64(meta, metaRevision)))); err != nil {
				return err
			}
		}
		return meta.Put(metaVersion, u64(layoutVersion))
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: initialise %s: %w", path, err)
	}
	log.V(1).Info("opened store", "path", path)
	return &Store{db: db, commits: groupcommit.New(commitBatch(db)), path: path, log: log,
		compact: autocompact.New(opts.TombstoneRevisions)}, nil
}

// Close closes the file and releases its lock, like any io.Closer. It
// waits for the transactions in flight to finish first (bbolt's Close
// cannot be abandoned halfway: the file would stay locked), so close the
// store after everything using it stopped: cancel a job.Runner's ctx and
// wait for its Start to return, then Close. Calls after the first return
// an error.
//
// It took a context.Context until issue 36, which it never honoured: a
// Close that cannot give up should not promise to.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: close %s: %w", s.path, err)
	}
	return nil
}

// DB returns the underlying bbolt handle, for backups (tx.WriteTo) and
// benchmarks. Writing to the store's buckets through it voids the contract.
func (s *Store) DB() *bolt.DB { return s.db }

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func getU64(b *bolt.Bucket, k []byte) int64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// decode splits a kv value; the returned value is copied out of the
// transaction's memory map.
func decode(v []byte) (rev int64, deleted bool, value []byte) {
	if len(v) < headerLen {
		return 0, true, nil
	}
	return int64(binary.BigEndian.Uint64(v[:8])), v[8] == flagDeleted, bytes.Clone(v[headerLen:])
}

func revOf(v []byte) (int64, bool) {
	if len(v) < headerLen {
		return 0, true
	}
	return int64(binary.BigEndian.Uint64(v[:8])), v[8] == flagDeleted
}

func (s *Store) check(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: %s %q: %w", op, key, err)
	}
	if err := storage.ValidateKey(key); err != nil {
		return fmt.Errorf("boltstore: %s: %w", op, err)
	}
	return nil
}

// Get returns the record under key, or storage.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (storage.Record, error) {
	if err := s.check(ctx, "get", key); err != nil {
		return storage.Record{}, err
	}
	var rec storage.Record
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketKV).Get([]byte(key))
		rev, deleted, value := decode(v)
		if v == nil || deleted {
			return storage.ErrNotFound
		}
		rec = storage.Record{Key: key, Value: value, Revision: rev}
		return nil
	})
	if err != nil {
		return storage.Record{}, fmt.Errorf("boltstore: get %q: %w", key, err)
	}
	return rec, nil
}

// write stores value (or a tombstone) under key at the next revision after
// check approves the current state, in a transaction shared with concurrent
// writes (storage/groupcommit). bbolt fsyncs before the commit returns.
func (s *Store) write(ctx context.Context, op, key string, value []byte, deleted bool, check func(cur []byte) error) (int64, error) {
	var rev int64
	err := s.commits.Do(ctx, func(tx *bolt.Tx) (reject, fatal error) {
		// Waiting for the writer lock may have taken a while: re-check ctx
		// before changing anything.
		if err := ctx.Err(); err != nil {
			return err, nil
		}
		kv, revs, meta := tx.Bucket(bucketKV), tx.Bucket(bucketRevs), tx.Bucket(bucketMeta)
		cur := kv.Get([]byte(key))
		if err := check(cur); err != nil {
			return err, nil
		}
		if cur != nil {
			// The key's old entry is superseded. Behind the prune point no
			// pass will look at it again: delete it now. Ahead of it, the
			// next pass does (prune).
			if old, _ := revOf(cur); old <= getU64(meta, metaPruned) {
				if err := revs.Delete(u64(uint64(old))); err != nil {
					return nil, err
				}
			}
		}
		next := getU64(meta, metaRevision) + 1
		if err := meta.Put(metaRevision, u64(uint64(next))); err != nil {
			return nil, err
		}
		flag := byte(flagLive)
		if deleted {
			flag = flagDeleted
		}
		buf := make([]byte, headerLen+len(value))
		binary.BigEndian.PutUint64(buf, uint64(next))
		buf[8] = flag
		copy(buf[headerLen:], value)
		if err := kv.Put([]byte(key), buf); err != nil {
			return nil, err
		}
		if err := revs.Put(u64(uint64(next)), []byte(key)); err != nil {
			return nil, err
		}
		rev = next
		return nil, nil
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: %s %q: %w", op, key, err)
	}
	if s.writes.Add(1)%pruneEvery == 0 {
		// The write is done; a failed pass is retried at the next one.
		if err := s.prune(); err != nil {
			s.log.Error(err, "pruning superseded revision entries failed", "path", s.path)
		}
	}
	return rev, nil
}

// prune removes the superseded entries of the revs bucket (those whose key
// was written again since, or whose key is gone) between the prune point
// and pruneLag revisions behind the head, at most maxPrunePass of them,
// and moves the prune point on. The change feed skips superseded entries,
// so pruning changes no answer: it bounds the index to the live keys, the
// tombstones and about pruneLag + pruneEvery superseded entries.
func (s *Store) prune() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		meta, kv, revs := tx.Bucket(bucketMeta), tx.Bucket(bucketKV), tx.Bucket(bucketRevs)
		from, to := getU64(meta, metaPruned), getU64(meta, metaRevision)-pruneLag
		if to <= from {
			return nil
		}
		var dead [][]byte
		c := revs.Cursor()
		seen := 0
		for rk, key := c.Seek(u64(uint64(from + 1))); rk != nil && seen < maxPrunePass; rk, key = c.Next() {
			rev := int64(binary.BigEndian.Uint64(rk))
			if rev > to {
				break
			}
			if cur, _ := revOf(kv.Get(key)); cur != rev {
				dead = append(dead, bytes.Clone(rk))
			}
			from, seen = rev, seen+1
		}
		if seen < maxPrunePass {
			from = to // the whole window was read
		}
		for _, rk := range dead {
			if err := revs.Delete(rk); err != nil {
				return err
			}
		}
		return meta.Put(metaPruned, u64(uint64(from)))
	})
}

// Create stores a new record, or returns storage.ErrExists.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := s.check(ctx, "create", key); err != nil {
		return 0, err
	}
	if err := storage.ValidateValue(key, value); err != nil {
		return 0, fmt.Errorf("boltstore: create: %w", err)
	}
	return s.write(ctx, "create", key, value, false, func(cur []byte) error {
		if _, deleted := revOf(cur); cur != nil && !deleted {
			return storage.ErrExists
		}
		return nil
	})
}

// matches returns the check for Update and Delete.
func matches(revision int64, any bool) func(cur []byte) error {
	return func(cur []byte) error {
		rev, deleted := revOf(cur)
		if cur == nil || deleted {
			return storage.ErrNotFound
		}
		if !any && rev != revision {
			return fmt.Errorf("at revision %d (current %d): %w", revision, rev, storage.ErrConflict)
		}
		return nil
	}
}

// Update replaces the value if the revision matches (compare-and-swap).
func (s *Store) Update(ctx context.Context, key string, value []byte, revision int64) (int64, error) {
	if err := s.check(ctx, "update", key); err != nil {
		return 0, err
	}
	if err := storage.ValidateValue(key, value); err != nil {
		return 0, fmt.Errorf("boltstore: update: %w", err)
	}
	return s.write(ctx, "update", key, value, false, matches(revision, false))
}

// Delete removes the record if the revision matches, or unconditionally
// when revision is 0. The key stays as a tombstone for the change feed until
// Compact.
func (s *Store) Delete(ctx context.Context, key string, revision int64) error {
	if err := s.check(ctx, "delete", key); err != nil {
		return err
	}
	rev, err := s.write(ctx, "delete", key, nil, true, matches(revision, revision == 0))
	if err != nil {
		return err
	}
	if to := s.compact.AfterDelete(rev); to > 0 {
		// The delete is done; a failed compaction is retried next time.
		if err := s.Compact(ctx, to); err != nil {
			s.log.Error(err, "automatic compaction of tombstones failed", "path", s.path)
		}
	}
	return nil
}

// List returns the records under prefix, sorted by key, from one read
// transaction (a consistent snapshot).
func (s *Store) List(ctx context.Context, prefix string) ([]storage.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("boltstore: list %q: %w", prefix, err)
	}
	var out []storage.Record
	p := []byte(prefix)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketKV).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if len(out)%256 == 255 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			rev, deleted, value := decode(v)
			if !deleted {
				out = append(out, storage.Record{Key: string(k), Value: value, Revision: rev})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: list %q: %w", prefix, err)
	}
	return out, nil
}

// Changes implements storage.ChangeFeed with a range scan of the revs
// bucket.
func (s *Store) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	return s.ChangesSkipping(ctx, prefix, since, limit, nil)
}

// ChangesSkipping implements storage.ValueSkipper: values skip asks for are
// not copied out of the database's pages.
func (s *Store) ChangesSkipping(ctx context.Context, prefix string, since int64, limit int, skip func(key string, revision int64) bool) (storage.Changes, error) {
	if err := ctx.Err(); err != nil {
		return storage.Changes{}, fmt.Errorf("boltstore: changes under %q: %w", prefix, err)
	}
	if limit <= 0 {
		limit = storage.DefaultChangesLimit
	}
	var out storage.Changes
	err := s.db.View(func(tx *bolt.Tx) error {
		meta, kv := tx.Bucket(bucketMeta), tx.Bucket(bucketKV)
		if c := getU64(meta, metaCompacted); since < c {
			return &storage.CompactedError{Since: since, Compacted: c}
		}
		out.Revision = getU64(meta, metaRevision)
		c := tx.Bucket(bucketRevs).Cursor()
		for rk, key := c.Seek(u64(uint64(since + 1))); rk != nil; rk, key = c.Next() {
			if !bytes.HasPrefix(key, []byte(prefix)) {
				continue
			}
			raw := kv.Get(key)
			rev, deleted := revOf(raw)
			if rev != int64(binary.BigEndian.Uint64(rk)) {
				continue // superseded: the key's current entry comes later (or it is gone)
			}
			ev := storage.Event{Type: storage.EventPut, Key: string(key), Revision: rev}
			switch {
			case deleted:
				ev.Type = storage.EventDelete
			case skip == nil || !skip(ev.Key, rev):
				_, _, ev.Value = decode(raw)
			}
			out.Events = append(out.Events, ev)
			if len(out.Events) == limit {
				out.Revision = rev
				break
			}
		}
		return nil
	})
	if err != nil {
		return storage.Changes{}, fmt.Errorf("boltstore: changes under %q: %w", prefix, err)
	}
	return out, nil
}

// Compact implements storage.Compactor: it forgets tombstones with a
// revision up to and including revision. It does not shrink the file (see
// the package documentation).
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: compact to %d: %w", revision, err)
	}
	removed := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta, kv, revs := tx.Bucket(bucketMeta), tx.Bucket(bucketKV), tx.Bucket(bucketRevs)
		revision = min(revision, getU64(meta, metaRevision))
		compacted := getU64(meta, metaCompacted)
		if revision <= compacted {
			return nil
		}
		// Only the window since the last compaction is read: it removed
		// every tombstone at or below compacted, and a new tombstone always
		// gets a new revision, so below the window no revs entry is a
		// tombstone's own (superseded entries are prune's). Scanning from the first entry instead read every live
		// key at each compaction (every 256 deletes): at 100,000 jobs that
		// scan took 29% of the Runner's CPU and held the writer lock long
		// enough for leases to lapse (docs/benchmarks.md).
		var dead [][]byte
		c := revs.Cursor()
		for rk, key := c.Seek(u64(uint64(compacted + 1))); rk != nil && int64(binary.BigEndian.Uint64(rk)) <= revision; rk, key = c.Next() {
			// A tombstone's own entry only: a superseded entry of a key
			// deleted later must not take the tombstone before its time.
			raw := kv.Get(key)
			if rev, deleted := revOf(raw); raw != nil && deleted && rev == int64(binary.BigEndian.Uint64(rk)) {
				dead = append(dead, bytes.Clone(rk), bytes.Clone(key))
			}
		}
		for i := 0; i < len(dead); i += 2 {
			if err := revs.Delete(dead[i]); err != nil {
				return err
			}
			if err := kv.Delete(dead[i+1]); err != nil {
				return err
			}
		}
		removed = len(dead) / 2
		return meta.Put(metaCompacted, u64(uint64(revision)))
	})
	if err != nil {
		return fmt.Errorf("boltstore: compact to %d: %w", revision, err)
	}
	s.log.V(1).Info("compacted tombstones", "path", s.path, "revision", revision, "removed", removed)
	return nil
}
