package bmcevents

import (
	"context"

	"github.com/bmckit/bmckit/storage"
)

// Follower reports the events stored since its previous call, in the
// order they were stored, from any Store: it is a [storage.Follower] over
// [Prefix] (a change feed where the store has one, a listing otherwise)
// that decodes what it reads. The first call reports every stored event.
// Not safe for concurrent use; give each reader its own.
type Follower struct {
	f *storage.Follower
}

// NewFollower follows the events in s.
func NewFollower(s storage.Store) *Follower {
	return &Follower{f: storage.NewFollower(s, Prefix)}
}

// Next returns the events stored since the previous call (none when
// nothing was). It does not block: call it on the host's own timer.
// Deletions (a host pruning old events) are not reported; a value that
// does not decode is left out and counted in skipped. As with
// storage.Follower, events taken in before an error are returned with a
// nil error.
func (f *Follower) Next(ctx context.Context) (events []Event, skipped int, err error) {
	changes, err := f.f.Next(ctx)
	for _, c := range changes {
		if c.Type != storage.EventPut {
			continue
		}
		e, derr := DecodeEvent(c.Value)
		if derr != nil {
			skipped++
			continue
		}
		events = append(events, e)
	}
	return events, skipped, err
}
