package bootstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/storage"
)

// Run fires attempt deadlines as they pass, marking attempts TimedOut and
// calling Config.OnTimeout without anyone polling. It loads the open
// attempts from the store when it starts and picks up attempts opened by
// other processes sharing the store every ResyncInterval, through a
// [storage.Follower] (one ChangeFeed read per resync on stores that have
// the capability, a List on others). It returns nil when ctx is canceled;
// its signature fits controller-runtime's manager.Runnable. Without Run,
// deadlines still apply, lazily: BootResult, Wait and late signals mark a
// passed deadline as TimedOut.
//
// Start one Run per tracker; several processes sharing a store may each run
// one: the compare-and-swap write decides which one fires OnTimeout.
func (t *Tracker) Run(ctx context.Context) error {
	follow := storage.NewFollower(t.store, t.prefix)
	nextResync := t.clock.Now()
	for {
		now := t.clock.Now()
		if !now.Before(nextResync) {
			if err := t.resyncDeadlines(ctx, follow); err != nil && ctx.Err() == nil {
				t.log.Error(err, "boot state resync failed; retrying later")
			}
			nextResync = now.Add(t.resync)
		}
		for _, d := range t.deadlines.due(now) {
			if ctx.Err() != nil {
				return nil
			}
			rec, err := t.expire(ctx, d.systemUUID, d.attemptID)
			if err == nil && rec.AttemptID == d.attemptID {
				// Still open (a stage deadline moved on): queue the next.
				t.queueDeadline(rec)
			}
			if err != nil && !errors.Is(err, ErrUnknownSystem) && ctx.Err() == nil {
				// Keep the deadline: the record did not change, so no
				// resync would bring it back.
				retry := min(t.resync, 5*time.Second)
				t.log.Error(err, "boot deadline check failed; will retry", "systemUUID", d.systemUUID, "attemptID", d.attemptID, "in", retry.String())
				d.at = now.Add(retry)
				t.deadlines.add(d)
			}
		}
		wake := nextResync
		if at, ok := t.deadlines.next(); ok && at.Before(wake) {
			wake = at
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.deadlines.kick:
		case <-t.clock.After(max(wake.Sub(t.clock.Now()), 0)):
		}
	}
}

// resyncDeadlines queues the deadline of every open attempt written since
// the last resync (everything, the first time).
func (t *Tracker) resyncDeadlines(ctx context.Context, follow *storage.Follower) error {
	events, err := follow.Next(ctx)
	if err != nil {
		err = fmt.Errorf("bootstate: follow records under %q: %w: %w", t.prefix, ErrStore, err)
	}
	for _, ev := range events {
		if ev.Type != storage.EventPut {
			continue
		}
		var rec Record
		if err := json.Unmarshal(ev.Value, &rec); err != nil {
			t.log.Error(err, "skipping undecodable boot record", "key", ev.Key)
			continue
		}
		t.queueDeadline(rec)
	}
	return err
}
