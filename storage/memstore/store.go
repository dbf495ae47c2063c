package memstore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/bmckit/bmckit/storage"
)

var (
	_ storage.Store        = (*Store)(nil)
	_ storage.ChangeFeed   = (*Store)(nil)
	_ storage.Compactor    = (*Store)(nil)
	_ storage.ValueSkipper = (*Store)(nil)
)

// Store is an in-memory storage.Store. The zero value is not usable; call New.
type Store struct {
	mu        sync.RWMutex
	rev       int64
	compacted int64
	entries   map[string]*entry
	// log holds one item per write in revision order; an item is stale when
	// its key has been written again since. Changes binary-searches it.
	log []logItem
}

type entry struct {
	value   []byte
	rev     int64
	deleted bool // tombstone kept for the change feed
}

type logItem struct {
	rev int64
	key string
}

// New returns an empty Store.
func New() *Store { return &Store{entries: map[string]*entry{}} }

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append(make([]byte, 0, len(b)), b...)
}

// Get returns the record under key, or storage.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (storage.Record, error) {
	if err := check(ctx, "get", key); err != nil {
		return storage.Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.entries[key]
	if !ok || e.deleted {
		return storage.Record{}, fmt.Errorf("memstore: get %q: %w", key, storage.ErrNotFound)
	}
	return storage.Record{Key: key, Value: clone(e.value), Revision: e.rev}, nil
}

// Create stores a new record, or returns storage.ErrExists.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := checkWrite(ctx, "create", key, value); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok && !e.deleted {
		return 0, fmt.Errorf("memstore: create %q: %w", key, storage.ErrExists)
	}
	return s.write(key, value, false), nil
}

// Update replaces the value if the revision matches (compare-and-swap).
func (s *Store) Update(ctx context.Context, key string, value []byte, revision int64) (int64, error) {
	if err := checkWrite(ctx, "update", key, value); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.match("update", key, revision, false); err != nil {
		return 0, err
	}
	return s.write(key, value, false), nil
}

// Delete removes the record if the revision matches, or unconditionally
// when revision is 0.
func (s *Store) Delete(ctx context.Context, key string, revision int64) error {
	if err := check(ctx, "delete", key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.match("delete", key, revision, revision == 0); err != nil {
		return err
	}
	s.write(key, nil, true)
	return nil
}

// match checks that key exists and, unless any, has revision. Callers hold
// s.mu.
func (s *Store) match(op, key string, revision int64, any bool) error {
	e, ok := s.entries[key]
	if !ok || e.deleted {
		return fmt.Errorf("memstore: %s %q: %w", op, key, storage.ErrNotFound)
	}
	if !any && e.rev != revision {
		return fmt.Errorf("memstore: %s %q at revision %d (current %d): %w", op, key, revision, e.rev, storage.ErrConflict)
	}
	return nil
}

// write stores a copy of value (or a tombstone) under the next revision.
// Callers hold s.mu for writing.
//
// A stored value is never handed out (readers get copies made under s.mu),
// so an update copies into the buffer the key already has when it is large
// enough: a record rewritten many times (a job's status) allocates a few
// times, not on every write.
func (s *Store) write(key string, value []byte, deleted bool) int64 {
	s.rev++
	if e := s.entries[key]; e != nil {
		switch {
		case deleted:
			e.value = nil
		case cap(e.value) >= len(value):
			e.value = append(e.value[:0], value...)
		default:
			// Records tend to grow as they are rewritten (a job's status):
			// room for half as much again saves most of the next growths.
			e.value = append(make([]byte, 0, len(value)+len(value)/2), value...)
		}
		e.rev, e.deleted = s.rev, deleted
	} else {
		var v []byte
		if !deleted {
			v = clone(value)
		}
		s.entries[key] = &entry{value: v, rev: s.rev, deleted: deleted}
	}
	s.log = append(s.log, logItem{rev: s.rev, key: key})
	if len(s.log) > 2*len(s.entries)+1024 {
		s.rebuildLog()
	}
	return s.rev
}

// rebuildLog drops stale log items (a key written again since, or
// compacted), keeping revision order without sorting. Callers hold s.mu
// for writing.
//
// The new log has room for the writes up to the next rebuild (which comes
// when it holds 2*len(entries)+1024 items), so appends do not copy it in
// between: growing it by append copied the whole log several times per
// rebuild, 2-3% of a Runner's CPU on memstore.
func (s *Store) rebuildLog() {
	log := make([]logItem, 0, 2*len(s.entries)+1024+1)
	for _, it := range s.log {
		if e, ok := s.entries[it.key]; ok && e.rev == it.rev {
			log = append(log, it)
		}
	}
	s.log = log
}

// List returns the records under prefix, sorted by key.
func (s *Store) List(ctx context.Context, prefix string) ([]storage.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: list %q: %w", prefix, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []storage.Record
	for k, e := range s.entries {
		if !e.deleted && strings.HasPrefix(k, prefix) {
			out = append(out, storage.Record{Key: k, Value: clone(e.value), Revision: e.rev})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Changes implements storage.ChangeFeed.
func (s *Store) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	return s.ChangesSkipping(ctx, prefix, since, limit, nil)
}

// ChangesSkipping implements storage.ValueSkipper: values skip asks for are
// not copied.
func (s *Store) ChangesSkipping(ctx context.Context, prefix string, since int64, limit int, skip func(key string, revision int64) bool) (storage.Changes, error) {
	if err := ctx.Err(); err != nil {
		return storage.Changes{}, fmt.Errorf("memstore: changes under %q: %w", prefix, err)
	}
	if limit <= 0 {
		limit = storage.DefaultChangesLimit
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if since < s.compacted {
		return storage.Changes{}, fmt.Errorf("memstore: changes under %q: %w", prefix,
			&storage.CompactedError{Since: since, Compacted: s.compacted})
	}
	out := storage.Changes{Revision: s.rev}
	i := sort.Search(len(s.log), func(i int) bool { return s.log[i].rev > since })
	for ; i < len(s.log); i++ {
		it := s.log[i]
		e, ok := s.entries[it.key]
		if !ok || e.rev != it.rev || !strings.HasPrefix(it.key, prefix) {
			continue // stale, compacted or outside the prefix
		}
		ev := storage.Event{Type: storage.EventPut, Key: it.key, Revision: e.rev}
		switch {
		case e.deleted:
			ev.Type = storage.EventDelete
		case skip == nil || !skip(it.key, e.rev):
			ev.Value = clone(e.value)
		}
		out.Events = append(out.Events, ev)
		if len(out.Events) == limit {
			out.Revision = ev.Revision
			break
		}
	}
	return out, nil
}

// Compact implements storage.Compactor: it forgets tombstones with a
// revision up to and including revision.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: compact to %d: %w", revision, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	revision = min(revision, s.rev)
	if revision <= s.compacted {
		return nil
	}
	for k, e := range s.entries {
		if e.deleted && e.rev <= revision {
			delete(s.entries, k)
		}
	}
	s.compacted = revision
	s.rebuildLog()
	return nil
}

func check(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %s %q: %w", op, key, err)
	}
	if err := storage.ValidateKey(key); err != nil {
		return fmt.Errorf("memstore: %s: %w", op, err)
	}
	return nil
}

func checkWrite(ctx context.Context, op, key string, value []byte) error {
	if err := check(ctx, op, key); err != nil {
		return err
	}
	if err := storage.ValidateValue(key, value); err != nil {
		return fmt.Errorf("memstore: %s: %w", op, err)
	}
	return nil
}
