package stagger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
)

// Clock stamps admissions: [clock.Source], so job.Clock, clock.Real,
// clock.Fake and any value with a Now method fit.
type Clock = clock.Source

// Limits and defaults of [Config].
const (
	// DefaultKeyPrefix is Config.KeyPrefix's default, the job.Runner's too.
	DefaultKeyPrefix = "bmckit/"
	// MaxLimit bounds Config.Limit: a group's record holds up to Limit
	// entries and is rewritten on every admission.
	MaxLimit = 10000
	// MinWait is the shortest wait Admit returns, so a caller that asks
	// again at once does not spin.
	MinWait = 10 * time.Millisecond
	// DefaultHold is Config.Hold's default.
	DefaultHold = time.Minute
)

// Config configures a [Limiter]. Every field but KeyPrefix and Clock is
// required.
type Config struct {
	// Store keeps one record per group; every Limiter on the same Store and
	// KeyPrefix (every replica) shares the limit. Required.
	Store storage.Store
	// Group returns the group of a system (a bmc.Endpoint.SystemKey such as
	// "10.0.0.5:443/redfish/v1/Systems/1"): the rack, PDU or circuit whose
	// inrush is limited. "" means the system is not limited. It is called on
	// every Admit, must be safe for concurrent use, and must give every
	// replica the same answer. Required.
	Group func(system string) string
	// Limit is how many power actions a group admits per Interval: any
	// Interval-long stretch of time holds at most Limit admissions. Required:
	// 1 to MaxLimit.
	Limit int
	// Interval is the length of the sliding window. Required: > 0.
	Interval time.Duration
	// KeyPrefix is where records live: KeyPrefix + "stagger/" + the
	// path-escaped group. Defaults to DefaultKeyPrefix ("bmckit/").
	KeyPrefix string
	// Clock stamps admissions and ages them. Replicas' clocks must agree to
	// well within Interval (see the package documentation). Defaults to the
	// wall clock.
	Clock Clock
	// Hold bounds how long a slot granted by [Limiter.AdmitHeld] is held
	// open for its request: the request must be sent, and its call is ended,
	// within Hold of the grant. A slot whose process died before it reported
	// the call's return counts as sent at grant + Hold, so it leaves the
	// window Hold + Interval after its grant. Longer than any power request
	// takes, and short enough that a crash does not hold a group back for
	// long. Defaults to DefaultHold (1 minute).
	Hold time.Duration
}

// Limiter admits power actions, at most Config.Limit per Config.Interval per
// group, and implements job.PowerGate. It keeps no state of its own: a new
// Limiter on the same Store (after a restart, or in another replica) sees
// every admission still in the window. Safe for concurrent use.
type Limiter struct {
	store    storage.Store
	group    func(string) string
	limit    int
	interval time.Duration
	hold     time.Duration
	prefix   string // KeyPrefix + "stagger/"
	clock    Clock
}

// New validates cfg and applies defaults.
func New(cfg Config) (*Limiter, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("stagger: Config.Store is required")
	case cfg.Group == nil:
		return nil, errors.New(`stagger: Config.Group is required (return "" for systems that are not limited)`)
	case cfg.Limit <= 0 || cfg.Limit > MaxLimit:
		return nil, fmt.Errorf("stagger: Config.Limit %d: must be between 1 and %d", cfg.Limit, MaxLimit)
	case cfg.Interval <= 0:
		return nil, fmt.Errorf("stagger: Config.Interval %v: must be positive", cfg.Interval)
	case cfg.Hold < 0:
		return nil, fmt.Errorf("stagger: Config.Hold %v: must not be negative (0 means the default, %v)", cfg.Hold, DefaultHold)
	}
	if cfg.Hold == 0 {
		cfg.Hold = DefaultHold
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultKeyPrefix
	}
	if err := storage.ValidateKey(cfg.KeyPrefix + "stagger/g"); err != nil {
		return nil, fmt.Errorf("stagger: Config.KeyPrefix %q: %w", cfg.KeyPrefix, err)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Limiter{store: cfg.Store, group: cfg.Group, limit: cfg.Limit, interval: cfg.Interval,
		hold: cfg.Hold, prefix: cfg.KeyPrefix + "stagger/", clock: cfg.Clock}, nil
}

// Key is the Store key of group's record.
func (l *Limiter) Key(group string) string { return l.prefix + url.PathEscape(group) }

// Admit reserves a slot in the window of system's group for the power action
// of task taskIndex of job, or says how long to wait before asking again.
// The slot counts from now, the grant: use [Limiter.AdmitHeld] (the
// job.Stepper does) to count it from the request's return instead.
//
//   - A system whose group is "" is admitted at once; nothing is stored.
//   - If the group has fewer than Limit admissions in the last Interval, the
//     action is recorded, stamped with Config.Clock's now, and Admit
//     returns 0.
//   - If this system, job and task was admitted within the last Interval (a
//     resumed or retried step), Admit returns 0 and takes no second slot:
//     its admission moves to now, since the earlier one may never have been
//     sent (a runner stopped in between, a request failed) and the window
//     must count the request that is.
//   - Otherwise Admit returns the time until the oldest admission leaves
//     the window (at least MinWait) and takes no slot.
//
// The check and the write are one compare-and-swap ([storage.Modify]), so
// concurrent callers in any number of processes never exceed the limit. A
// store error (or an unreadable record) is returned wrapped; the
// job.Stepper retries it as a transient error. Safe for concurrent use.
func (l *Limiter) Admit(ctx context.Context, system, job string, taskIndex int) (time.Duration, error) {
	wait, _, err := l.admit(ctx, system, job, taskIndex, false)
	return wait, err
}

// grant is what admit granted: where, to whom, and when (by Config.Clock,
// with its monotonic reading on the wall clock). The zero grant (key "")
// means nothing was stored: the system is in no group.
type grant struct {
	key, group, id string
	at             time.Time
}

// admit is Admit, and AdmitHeld when held: the slot it grants is then
// stored held open until at + Hold.
func (l *Limiter) admit(ctx context.Context, system, job string, taskIndex int, held bool) (time.Duration, grant, error) {
	switch {
	case system == "":
		return 0, grant{}, errors.New("stagger: Admit: system is empty")
	case job == "":
		return 0, grant{}, fmt.Errorf("stagger: Admit for system %q: job is empty", system)
	case taskIndex < 0:
		return 0, grant{}, fmt.Errorf("stagger: Admit for system %q, job %q: taskIndex %d is negative", system, job, taskIndex)
	}
	group := l.group(system)
	if group == "" {
		return 0, grant{}, nil
	}
	key := l.Key(group)
	if err := storage.ValidateKey(key); err != nil {
		return 0, grant{}, fmt.Errorf("stagger: group %q of system %q: %w", group, system, err)
	}
	g := grant{key: key, group: group, id: system + "|" + job + "|" + strconv.Itoa(taskIndex)}
	var wait time.Duration
	_, err := storage.Modify(ctx, l.store, key, func(cur *storage.Record) ([]byte, error) {
		rec, err := l.read(cur, key, group)
		if err != nil {
			return nil, err
		}
		// The last attempt's now is the grant's: its write is the one that
		// took.
		g.at = l.clock.Now()
		next, w, write := l.decide(rec, g.id, g.at, held)
		wait = w
		if !write {
			return nil, storage.ErrNoChange
		}
		return json.Marshal(next)
	})
	if err != nil {
		return 0, grant{}, fmt.Errorf("stagger: admitting task %d of job %q on %s (group %q): %w", taskIndex, job, system, group, err)
	}
	return wait, g, nil
}

// read decodes a group's record (cur nil: none yet).
func (l *Limiter) read(cur *storage.Record, key, group string) (record, error) {
	var rec record
	if cur != nil {
		if err := json.Unmarshal(cur.Value, &rec); err != nil {
			return record{}, fmt.Errorf("stagger: record %q is not readable (%v); delete it to reset group %q", key, err, group)
		}
	}
	return rec, nil
}

// record is a group's stored value: the admissions of the last Interval, in
// the order they were made.
type record struct {
	Admitted []entry `json:"admitted,omitempty"`
}

// entry is one slot. A stamped entry (HeldUntil nil) counts from At. A held
// one (AdmitHeld's, until its request's call returned) counts as made now
// until HeldUntil, and from HeldUntil after that; At is then its grant.
// Records written before HeldUntil existed hold stamped entries only, and a
// Limiter that predates it reads a held entry as stamped at its grant (it
// ignores the field), as every admission was counted then.
type entry struct {
	ID        string     `json:"id"`                  // system|job|task
	At        time.Time  `json:"at"`                  // the writing process's clock, UTC
	HeldUntil *time.Time `json:"heldUntil,omitempty"` // held open until then, UTC
}

// counted is when e counts from, seen at now: At for a stamped entry; for a
// held one now until HeldUntil, then HeldUntil.
func (e entry) counted(now time.Time) time.Time {
	if e.HeldUntil == nil {
		return e.At
	}
	if now.Before(*e.HeldUntil) {
		return now
	}
	return *e.HeldUntil
}

// decide applies one admission request for id at now to rec. It returns the
// record to write (when write), and the wait (0: admitted). A held
// admission is stored held open until now + Hold.
//
// An earlier admission of id is replaced by one at now rather than kept:
// the action it admitted may not have been sent then (a runner stopped
// between the admission and the request, a request that failed and is
// retried), and the window must count the request when it is actually sent.
// Every write leaves at most Limit admissions in the window, so while id's
// own is there, the others number at most Limit-1 and the move always fits:
// a re-admission returns 0 and takes no second slot.
func (l *Limiter) decide(rec record, id string, now time.Time, held bool) (next record, wait time.Duration, write bool) {
	var live, others []entry // in the window; others without id's
	var oldest time.Time     // when the first of others may leave the window
	clamped := false
	for _, e := range rec.Admitted {
		if l.clamp(&e, now) {
			clamped = true
		}
		from := e.counted(now)
		if now.Sub(from) >= l.interval {
			continue // left the window
		}
		live = append(live, e)
		if e.ID == id {
			continue
		}
		others = append(others, e)
		if oldest.IsZero() || from.Before(oldest) {
			oldest = from
		}
	}
	if len(others) < l.limit {
		e := entry{ID: id, At: now.UTC()}
		if held {
			until := now.Add(l.hold).UTC()
			e.HeldUntil = &until
		}
		return record{Admitted: append(others, e)}, 0, true
	}
	// Full. For a re-admission this happens only when Limiters sharing the
	// store disagree on Limit or Interval; its earlier admission stays.
	return record{Admitted: live}, max(oldest.Add(l.interval).Sub(now), MinWait), clamped
}

// clamp brings times that no clock agreeing with ours wrote back to now:
// a stamp more than one Interval ahead is taken as made now, a hold that
// ends more than Hold + Interval ahead as ending Hold from now. So a clock
// set far ahead holds the group back for one Interval (or one Hold), not
// until our clock catches up. It reports whether it changed e (the caller
// stores that).
func (l *Limiter) clamp(e *entry, now time.Time) bool {
	changed := false
	if e.At.Sub(now) > l.interval {
		e.At = now.UTC()
		changed = true
	}
	if e.HeldUntil != nil && e.HeldUntil.Sub(now) > l.hold+l.interval {
		until := now.Add(l.hold).UTC()
		e.HeldUntil = &until
		changed = true
	}
	return changed
}
