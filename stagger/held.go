package stagger

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/storage"
)

// AdmitHeld is [Limiter.Admit] for a power request about to be sent, with a
// slot that counts from the request instead of the grant (the job.Stepper
// uses it). When it grants a slot (wait 0):
//
//   - The slot is stored held open: every Limiter counts it as made now
//     until it is released, or until Config.Hold after the grant.
//   - The request must be made under send, a ctx derived from ctx. Drivers
//     call bmc.Admit before each request they write; under send, a request
//     that would go out Config.Hold or more after the grant is refused with
//     a transient error wrapping [ErrHoldExpired], and send ends then, so
//     nothing sent for the slot outlives its hold.
//   - release must be called once that call has returned, whatever it
//     returned. It stamps the slot with the time it is called, so the slot
//     leaves the window one Interval after the call's return, and frees
//     send's resources. It writes the store under its ctx; if that fails
//     (or release is never called: the process died), the slot stays held
//     and counts from grant + Hold, which is later than any request it
//     covers. Calling it again does nothing.
//
// So every request sent for a slot, and whatever its BMC did before it
// answered, falls within the slot's time in the window. Asking again for
// the same system, job and task (a retried or resumed request) replaces its
// slot with a newly held one, as for Admit.
//
// When it grants no slot (wait > 0, an error, or a system in no group that
// is admitted without one), send is ctx and release does nothing. Safe for
// concurrent use.
func (l *Limiter) AdmitHeld(ctx context.Context, system, job string, taskIndex int) (send context.Context, release func(context.Context), wait time.Duration, err error) {
	wait, g, err := l.admit(ctx, system, job, taskIndex, true)
	if err != nil || wait > 0 || g.key == "" {
		return ctx, func(context.Context) {}, wait, err
	}
	s := &heldSlot{l: l, g: g, until: g.at.Add(l.hold)}
	// The ctx deadline is on the real clock (as contexts are), whatever
	// Config.Clock is; Sending checks the bound on Config.Clock.
	send, cancel := context.WithTimeoutCause(bmc.WithSendHook(ctx, s), l.hold-l.clock.Now().Sub(g.at),
		fmt.Errorf("stagger: %w", ErrHoldExpired))
	var once sync.Once
	return send, func(ctx context.Context) {
		once.Do(func() {
			cancel()
			_ = l.release(ctx, g) // on failure the slot stays held: counted until grant + Hold
		})
	}, 0, nil
}

// ErrHoldExpired reports that a power request was not sent because the slot
// it was granted was held open for Config.Hold already: a slot's requests
// must all be sent within Hold of its grant. Retry: the retry takes its slot
// again.
var ErrHoldExpired = fmt.Errorf("power slot held open too long; request not sent")

// heldSlot is a slot granted by AdmitHeld, as the bmc.SendHook of its
// requests.
type heldSlot struct {
	l     *Limiter
	g     grant
	until time.Time // grant + Hold, on Config.Clock (monotonic on the wall clock)
}

var _ bmc.SendHook = (*heldSlot)(nil)

// Sending implements bmc.SendHook: a request may go out before the hold
// ends.
func (s *heldSlot) Sending() error {
	if late := s.l.clock.Now().Sub(s.until); late >= 0 {
		return bmc.Transient(fmt.Errorf("stagger: slot of %s in group %q granted %v ago, held open for at most %v: %w",
			s.g.id, s.g.group, s.l.hold+late, s.l.hold, ErrHoldExpired))
	}
	return nil
}

// release stamps g's slot with now, its request's return. The slot is
// found by its ID and grant time; if the same system, job and task was
// granted again since (a later slot replaced it), that slot stays as it is.
// If it is not there any more (pruned after a very late release, or dropped
// by an older Limiter), the stamp is added: the request went out and must
// be counted.
func (l *Limiter) release(ctx context.Context, g grant) error {
	granted := g.at.UTC()
	_, err := storage.Modify(ctx, l.store, g.key, func(cur *storage.Record) ([]byte, error) {
		rec, err := l.read(cur, g.key, g.group)
		if err != nil {
			return nil, err
		}
		now := l.clock.Now().UTC()
		found := false
		for i := range rec.Admitted {
			e := &rec.Admitted[i]
			if e.ID != g.id {
				continue
			}
			found = true
			if !e.At.Equal(granted) {
				return nil, storage.ErrNoChange // granted again since
			}
			e.At, e.HeldUntil = now, nil
		}
		if !found {
			rec.Admitted = append(rec.Admitted, entry{ID: g.id, At: now})
		}
		return json.Marshal(rec)
	})
	if err != nil {
		return fmt.Errorf("stagger: releasing the slot of %s (group %q): %w", g.id, g.group, err)
	}
	return nil
}
