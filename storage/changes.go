package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// ErrCompacted: a [ChangeFeed] no longer holds the changes after the
// requested revision (deletions older than its compaction point were
// forgotten). Re-read the current state with List and continue from there;
// [Follower] does this by itself.
var ErrCompacted = errors.New("storage: changes compacted")

// CompactedError is the error a [ChangeFeed] returns for a since older than
// its compaction point. It matches ErrCompacted with errors.Is.
type CompactedError struct {
	// Since is the revision the caller asked for.
	Since int64
	// Compacted is the feed's compaction point: changes after it are all
	// still available.
	Compacted int64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("%v: changes after revision %d were compacted up to revision %d; re-list and continue from there",
		ErrCompacted, e.Since, e.Compacted)
}

// Unwrap returns ErrCompacted.
func (e *CompactedError) Unwrap() error { return ErrCompacted }

// DefaultChangesLimit is the number of events [ChangeFeed.Changes] returns
// when the caller passes a limit <= 0.
const DefaultChangesLimit = 1000

// EventType says whether a key was written or deleted.
type EventType string

// The event types.
const (
	// EventPut: the key was created or updated; Event.Value holds the value.
	EventPut EventType = "put"
	// EventDelete: the key was deleted; Event.Value is nil.
	EventDelete EventType = "delete"
)

// Event is one change seen by a [ChangeFeed] or a [Follower].
type Event struct {
	Type EventType
	Key  string
	// Value is the value written (nil for deletes). Owned by the caller.
	Value []byte
	// Revision is the store-wide revision of the change. A delete gets its
	// own revision from the same counter as writes.
	Revision int64
}

// Changes is one batch returned by [ChangeFeed.Changes].
type Changes struct {
	// Events are sorted by Revision, ascending.
	Events []Event
	// Revision is the cursor to pass as since on the next call: every change
	// with a revision up to and including it has been returned (or was not
	// under the prefix).
	Revision int64
}

// ChangeFeed is the optional change-notification capability of a [Store],
// found by type assertion. It is a poll-since-revision feed: a caller keeps a
// cursor and asks for what changed after it, so a runner or a boot-state
// waiter reacts to changes without listing everything. memstore, boltstore
// and sqlstore implement it; use [Follower] to get the same events from any
// Store, with or without a ChangeFeed.
//
// The feed is level-triggered: it reports the latest state of every key that
// changed after since (its current value, or its deletion), not every
// intermediate write. A key written twice between two polls appears once,
// with the later revision.
type ChangeFeed interface {
	// Changes returns up to limit (DefaultChangesLimit when limit <= 0)
	// events for keys starting with prefix whose revision is greater than
	// since, sorted by revision. It returns ErrCompacted (wrapped) when since
	// is older than the feed's compaction point and deletions after since may
	// have been forgotten. Safe for concurrent use; it never blocks waiting
	// for changes, and it honours ctx.
	Changes(ctx context.Context, prefix string, since int64, limit int) (Changes, error)
}

// ValueSkipper is an optional capability of a [ChangeFeed], found by type
// assertion: ChangesSkipping is Changes, except that a put event for which
// skip(key, revision) reports true comes without its value (Value nil; Type,
// Key and Revision as Changes gives them). A reader that already holds
// some of the values — a job runner reading back its own writes — so spares
// the store copying them out of its memory or pages. Delete events are never
// passed to skip. skip may be called while the store holds internal locks:
// it must be quick and must not call the store. memstore and boltstore
// implement it; [Follower.SkipValues] uses it when present. A store whose
// values arrive with the change rows anyway (sqlstore) gains nothing by
// implementing it.
type ValueSkipper interface {
	ChangesSkipping(ctx context.Context, prefix string, since int64, limit int, skip func(key string, revision int64) bool) (Changes, error)
}

// ChangesSkipping reads feed's changes as [ValueSkipper.ChangesSkipping]
// does: through feed's own ChangesSkipping when it has one, and otherwise
// through Changes, dropping the values skip asks for. For wrappers of a Store
// (counting, tracing) that pass its change feed through and want to keep
// this capability too.
func ChangesSkipping(ctx context.Context, feed ChangeFeed, prefix string, since int64, limit int, skip func(key string, revision int64) bool) (Changes, error) {
	if v, ok := feed.(ValueSkipper); ok {
		return v.ChangesSkipping(ctx, prefix, since, limit, skip)
	}
	ch, err := feed.Changes(ctx, prefix, since, limit)
	if err != nil || skip == nil {
		return ch, err
	}
	for i := range ch.Events {
		if ev := &ch.Events[i]; ev.Type == EventPut && skip(ev.Key, ev.Revision) {
			ev.Value = nil
		}
	}
	return ch, nil
}

// Compactor is the optional capability of a [Store] whose [ChangeFeed] keeps
// deletion markers (tombstones). Compact forgets the tombstones with a
// revision up to and including revision (capped at the store's current
// revision); afterwards Changes with a since below that point returns
// ErrCompacted. Compaction never changes what Get and List return. Safe for
// concurrent use and idempotent; a revision below the current compaction
// point is a no-op.
type Compactor interface {
	Compact(ctx context.Context, revision int64) error
}

// Follower reports the changes under one prefix of any [Store]. It uses the
// store's [ChangeFeed] when there is one and otherwise (or after
// ErrCompacted) lists the prefix and compares it with what it saw before,
// the way fs.ReadFile falls back when an FS lacks ReadFileFS. The first call
// to Next reports every existing record as an [EventPut].
//
// A Follower remembers the revision of every key under its prefix. It is not
// safe for concurrent use; give each goroutine its own.
type Follower struct {
	store  Store
	prefix string
	skip   func(key string, revision int64) bool
	known  map[string]int64 // key -> revision last reported
	cursor int64            // ChangeFeed cursor; valid when synced
	synced bool
}

// NewFollower returns a Follower of the keys under prefix in s.
func NewFollower(s Store, prefix string) *Follower {
	return &Follower{store: s, prefix: prefix, known: map[string]int64{}}
}

// SkipValues asks the Follower to leave out the value of every put event
// for which skip(key, revision) reports true, when the store's feed can
// (it implements [ValueSkipper]): such events come with a nil Value. With
// other stores, and in the events of a resync (a List), values are always
// there, so a caller must still handle them. skip runs inside the store's
// feed read: it must be quick and must not call the store. Call it before
// the first Next.
func (f *Follower) SkipValues(skip func(key string, revision int64) bool) { f.skip = skip }

// Next returns the changes since the previous call, sorted by revision
// (empty when nothing changed). It does not block waiting for changes: call
// it when woken by a timer. With a ChangeFeed each call costs one feed read;
// without one, a List of the prefix. When an error ends a call that already
// took in some changes, Next returns those with a nil error, and the next call
// continues after them: an event is never taken in without being reported.
func (f *Follower) Next(ctx context.Context) ([]Event, error) {
	feed, ok := f.store.(ChangeFeed)
	if !ok || !f.synced {
		return f.resync(ctx, feed, 0)
	}
	skipper, _ := feed.(ValueSkipper)
	var out []Event
	for {
		var ch Changes
		var err error
		if f.skip != nil && skipper != nil {
			ch, err = skipper.ChangesSkipping(ctx, f.prefix, f.cursor, 0, f.skip)
		} else {
			ch, err = feed.Changes(ctx, f.prefix, f.cursor, 0)
		}
		if ce := (*CompactedError)(nil); errors.As(err, &ce) {
			more, err := f.resync(ctx, feed, ce.Compacted)
			if err != nil && len(out) > 0 {
				// Report what was applied; the failed resync is retried
				// (the feed answers ErrCompacted again) on the next call.
				return out, nil
			}
			return append(out, more...), err
		}
		if err != nil {
			if len(out) > 0 {
				// Earlier pages were applied and the cursor moved past them:
				// report them now (they would never be reported again) and
				// let the next call continue from the cursor.
				return out, nil
			}
			return nil, fmt.Errorf("follow changes under %q: %w", f.prefix, err)
		}
		for _, ev := range ch.Events {
			if e, ok := f.apply(ev); ok {
				out = append(out, e)
			}
		}
		if ch.Revision > f.cursor {
			f.cursor = ch.Revision
		}
		if len(ch.Events) < DefaultChangesLimit {
			return out, nil
		}
	}
}

// apply records ev and reports whether it is news to the caller.
func (f *Follower) apply(ev Event) (Event, bool) {
	rev, seen := f.known[ev.Key]
	switch ev.Type {
	case EventDelete:
		if !seen {
			return ev, false
		}
		delete(f.known, ev.Key)
	default:
		if seen && rev >= ev.Revision {
			return ev, false
		}
		f.known[ev.Key] = ev.Revision
	}
	return ev, true
}

// resync lists the prefix and reports the difference with what f knew. With
// a feed, the cursor restarts at the newest revision listed or the feed's
// compaction point, whichever is larger. Both are at most the revision of
// the List snapshot (compaction happened before the List), so every change
// after the snapshot is still to come from the feed; changes up to it are
// reflected in the listing, and the ones the feed repeats are filtered by
// apply.
func (f *Follower) resync(ctx context.Context, feed ChangeFeed, compacted int64) ([]Event, error) {
	recs, err := f.store.List(ctx, f.prefix)
	if err != nil {
		return nil, fmt.Errorf("follow changes under %q: %w", f.prefix, err)
	}
	var out []Event
	present := make(map[string]bool, len(recs))
	var maxRev int64
	for _, r := range recs {
		present[r.Key] = true
		maxRev = max(maxRev, r.Revision)
		if e, ok := f.apply(Event{Type: EventPut, Key: r.Key, Value: r.Value, Revision: r.Revision}); ok {
			out = append(out, e)
		}
	}
	for k, rev := range f.known {
		if !present[k] {
			delete(f.known, k)
			// The deletion's own revision is unknown without a feed; report
			// the last revision the key had.
			out = append(out, Event{Type: EventDelete, Key: k, Revision: rev})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	if feed != nil {
		f.cursor, f.synced = max(maxRev, compacted), true
	}
	return out, nil
}
