package bootstate

import (
	"context"
	"encoding/json"
	"fmt"
)

// Run fires attempt deadlines as they pass, marking attempts TimedOut and
// calling Config.OnTimeout without anyone polling. It rebuilds its queue
// from the store when it starts and every ResyncInterval (picking up
// attempts opened by other processes sharing the store), and returns nil
// when ctx is canceled. Its signature fits controller-runtime's
// manager.Runnable. Without Run, deadlines still apply, lazily: BootResult,
// Wait and late signals mark a passed deadline as TimedOut.
//
// Run one Run per tracker; several processes sharing a store may each run
// one: the compare-and-swap write decides which one fires OnTimeout.
func (t *Tracker) Run(ctx context.Context) error {
	nextResync := t.clock.Now()
	for {
		now := t.clock.Now()
		if !now.Before(nextResync) {
			if err := t.resyncDeadlines(ctx); err != nil {
				t.log.Error(err, "boot state resync failed; retrying later")
			}
			nextResync = now.Add(t.resync)
		}
		for _, d := range t.deadlines.due(now) {
			if ctx.Err() != nil {
				return nil
			}
			if _, err := t.expire(ctx, d.systemUUID, d.attemptID); err != nil {
				t.log.Error(err, "boot deadline check failed; retrying at the next resync", "systemUUID", d.systemUUID, "attemptID", d.attemptID)
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

// resyncDeadlines queues the deadline of every uncompleted attempt in the store.
func (t *Tracker) resyncDeadlines(ctx context.Context) error {
	recs, err := t.store.List(ctx, t.prefix)
	if err != nil {
		return fmt.Errorf("bootstate: list records under %q: %w: %w", t.prefix, ErrStore, err)
	}
	for _, r := range recs {
		var rec Record
		if err := json.Unmarshal(r.Value, &rec); err != nil {
			t.log.Error(err, "skipping undecodable boot record", "key", r.Key)
			continue
		}
		if !rec.Completed() {
			t.deadlines.add(deadline{at: rec.Deadline, systemUUID: rec.SystemUUID, attemptID: rec.AttemptID})
		}
	}
	return nil
}
