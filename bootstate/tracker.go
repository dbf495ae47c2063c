package bootstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/timestamp"
)

// Errors the tracker returns (wrapped; use errors.Is).
var (
	// ErrUnknownSystem: no boot record exists for the system (no attempt was
	// ever started for it).
	ErrUnknownSystem = errors.New("unknown system: no boot attempt was started for it")
	// ErrStaleAttempt: the attempt named is not the system's current one (a
	// newer attempt replaced it, or it never existed).
	ErrStaleAttempt = errors.New("not the current boot attempt")
	// ErrUnauthorized: the token is missing or wrong.
	ErrUnauthorized = errors.New("missing or invalid boot token")
	// ErrSignalNotAllowed: the signal may not be posted by callers.
	ErrSignalNotAllowed = errors.New("signal not accepted from callers")
	// ErrStore: the store failed; the caller should retry later. Errors
	// wrapping it also wrap the store's own error.
	ErrStore = errors.New("boot state store unavailable")
	// ErrCorruptRecord: a stored boot record does not decode. Retrying
	// does not help; the handler and the fetch middleware answer 500.
	ErrCorruptRecord = errors.New("boot record does not decode")
)

// Clock is the time source the tracker uses for deadlines and waits:
// [clock.Clock], so clock.Real, clock.Fake and any value with Now and After
// fit.
type Clock = clock.Clock

// Defaults of [Config].
const (
	DefaultTimeout        = 30 * time.Minute
	DefaultKeyPrefix      = "bootstate/"
	DefaultPollInterval   = 2 * time.Second
	DefaultResyncInterval = 15 * time.Second
	DefaultHistoryLimit   = 5
)

// Config configures a [Tracker]. The zero value of every field but Store
// (and Secret, unless InsecureSkipAuth is set) means its default.
type Config struct {
	// Store keeps the boot records. Required.
	Store storage.Store
	// Clock is the time source. Defaults to the wall clock.
	Clock Clock
	// Logger logs signals, completions and timeouts (never tokens).
	// Defaults to logr.Discard().
	Logger logr.Logger
	// DefaultTimeout is how long an attempt may take when StartBoot is
	// given no timeout. Defaults to DefaultTimeout (30 minutes).
	DefaultTimeout time.Duration
	// DefaultPolicy decides completion for attempts started without their
	// own policy. Defaults to AllOfSignals(SignalBootStateReceived).
	DefaultPolicy Policy
	// Secret keys the per-boot tokens (HMAC-SHA256 over system UUID and
	// attempt ID). At least MinSecretLen bytes. Required unless
	// InsecureSkipAuth is set. Never logged or stored.
	Secret []byte
	// PreviousSecrets are secrets being rotated out: tokens they keyed are
	// still accepted, new tokens are keyed with Secret only. Rotate by
	// moving the old Secret here, and drop it once every attempt started
	// before the rotation has ended (the longest attempt timeout; 30
	// minutes by default). Each at least MinSecretLen bytes. Never logged.
	PreviousSecrets [][]byte
	// InsecureSkipAuth turns token checks off, for labs. Defaults to false
	// (tokens required). Setting it together with Secret is an error, so a
	// forgotten flag cannot silently disable auth.
	InsecureSkipAuth bool
	// CallbackSignals are the signals a booted server may post to the
	// Handler (in the "signal" field). Defaults to
	// [SignalBootStateReceived] only.
	CallbackSignals []string
	// KeyPrefix is where records live in the Store: KeyPrefix + lower-case
	// system UUID. Defaults to "bootstate/".
	KeyPrefix string
	// OnTimeout is called once, by the goroutine whose write marked an
	// attempt TimedOut (Run's loop, a BootResult or Wait caller, or a
	// handler that saw a late signal), so the host can retry the boot. It
	// runs synchronously: start a goroutine for slow work. At most once:
	// a crash between the write and the call loses the call (BootResult
	// still reports TimedOut). Defaults to none.
	OnTimeout func(ctx context.Context, rec Record)
	// PollInterval bounds how long Wait sleeps between store reads, which
	// matters only for writes made by another process (writes by this
	// tracker wake waiters at once). Defaults to 2 seconds.
	PollInterval time.Duration
	// ResyncInterval is how often Run looks for attempts started by other
	// processes sharing the store (so their deadlines fire at most this
	// late here). Defaults to 15 seconds.
	ResyncInterval time.Duration
	// HistoryLimit is how many earlier attempts a record remembers.
	// Defaults to 5.
	HistoryLimit int
	// Observer receives signals stored, boots completed and boot timeouts
	// for metrics and traces (see [Observer]). Defaults to none.
	Observer Observer
}

// Tracker keeps boot records in a [storage.Store]: it opens attempts,
// records signals, applies the completion policy and deadlines, and lets
// callers wait for completion. It implements the job package's
// BootTracker (StartBoot and BootResult). Safe for concurrent use.
type Tracker struct {
	store     storage.Store
	clock     Clock
	log       logr.Logger
	timeout   time.Duration
	policy    Policy
	secret    []byte
	previous  [][]byte // Config.PreviousSecrets: verify only
	noAuth    bool
	callback  map[string]bool
	prefix    string
	onTimeout func(context.Context, Record)
	poll      time.Duration
	resync    time.Duration
	history   int
	obs       Observer

	notify    notifier
	deadlines *deadlines
}

// NewTracker checks cfg and returns a Tracker.
func NewTracker(cfg Config) (*Tracker, error) {
	if cfg.Store == nil {
		return nil, errors.New("bootstate: Config.Store is required")
	}
	t := &Tracker{
		store:     cfg.Store,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		timeout:   cfg.DefaultTimeout,
		policy:    cfg.DefaultPolicy,
		noAuth:    cfg.InsecureSkipAuth,
		callback:  map[string]bool{},
		prefix:    cfg.KeyPrefix,
		onTimeout: cfg.OnTimeout,
		poll:      cfg.PollInterval,
		resync:    cfg.ResyncInterval,
		history:   cfg.HistoryLimit,
		obs:       cfg.Observer,
		deadlines: newDeadlines(),
	}
	if t.clock == nil {
		t.clock = clock.Real{}
	}
	if t.log.GetSink() == nil {
		t.log = logr.Discard()
	}
	if t.timeout <= 0 {
		t.timeout = DefaultTimeout
	}
	if t.policy.IsZero() {
		t.policy = AllOfSignals(SignalBootStateReceived)
	}
	if err := t.policy.Validate(); err != nil {
		return nil, fmt.Errorf("bootstate: Config.DefaultPolicy: %w", err)
	}
	switch {
	case cfg.InsecureSkipAuth && len(cfg.Secret) > 0:
		return nil, errors.New("bootstate: Config.Secret and Config.InsecureSkipAuth are both set; choose one")
	case !cfg.InsecureSkipAuth && len(cfg.Secret) < MinSecretLen:
		return nil, fmt.Errorf("bootstate: Config.Secret must be at least %d bytes (got %d); set InsecureSkipAuth to run without tokens in a lab", MinSecretLen, len(cfg.Secret))
	}
	t.secret = append([]byte(nil), cfg.Secret...)
	for i, old := range cfg.PreviousSecrets {
		if cfg.InsecureSkipAuth {
			return nil, errors.New("bootstate: Config.PreviousSecrets and Config.InsecureSkipAuth are both set; choose one")
		}
		if len(old) < MinSecretLen {
			return nil, fmt.Errorf("bootstate: Config.PreviousSecrets[%d] must be at least %d bytes (got %d)", i, MinSecretLen, len(old))
		}
		t.previous = append(t.previous, append([]byte(nil), old...))
	}
	sigs := cfg.CallbackSignals
	if len(sigs) == 0 {
		sigs = []string{SignalBootStateReceived}
	}
	for _, s := range sigs {
		if err := ValidateSignal(s); err != nil {
			return nil, fmt.Errorf("bootstate: Config.CallbackSignals: %w", err)
		}
		t.callback[s] = true
	}
	if t.prefix == "" {
		t.prefix = DefaultKeyPrefix
	}
	if err := storage.ValidateKey(t.prefix + "00000000-0000-0000-0000-000000000000"); err != nil {
		return nil, fmt.Errorf("bootstate: Config.KeyPrefix: %w", err)
	}
	if t.poll <= 0 {
		t.poll = DefaultPollInterval
	}
	if t.resync <= 0 {
		t.resync = DefaultResyncInterval
	}
	if t.history <= 0 {
		t.history = DefaultHistoryLimit
	}
	return t, nil
}

// AuthEnabled reports whether requests must carry tokens.
func (t *Tracker) AuthEnabled() bool { return !t.noAuth }

// Token returns the per-boot token of an attempt, for the host to embed in
// the iPXE script or Ignition config it serves (for example as a kernel
// argument or in the unit that posts /bootstate). It returns an error when
// the tracker runs without tokens or the arguments are malformed.
func (t *Tracker) Token(systemUUID, attemptID string) (string, error) {
	if t.noAuth {
		return "", errors.New("bootstate: tokens are disabled (InsecureSkipAuth)")
	}
	u, err := ParseSystemUUID(systemUUID)
	if err != nil {
		return "", fmt.Errorf("bootstate: %w", err)
	}
	if err := ValidateAttemptID(attemptID); err != nil {
		return "", fmt.Errorf("bootstate: %w", err)
	}
	return tokenFor(t.secret, u, attemptID), nil
}

// checkToken verifies a token (no-op without auth). The error never holds
// the token.
func (t *Tracker) checkToken(systemUUID, attemptID, token string) error {
	if t.noAuth {
		return nil
	}
	if token == "" {
		return fmt.Errorf("%w: no token presented for system %s", ErrUnauthorized, systemUUID)
	}
	if attemptID == "" || !t.tokenValid(systemUUID, attemptID, token) {
		return fmt.Errorf("%w: token does not match system %s attempt %q", ErrUnauthorized, systemUUID, attemptID)
	}
	return nil
}

// tokenValid checks token against Secret, then each of PreviousSecrets.
func (t *Tracker) tokenValid(systemUUID, attemptID, token string) bool {
	if tokenValid(t.secret, systemUUID, attemptID, token) {
		return true
	}
	for _, old := range t.previous {
		if tokenValid(old, systemUUID, attemptID, token) {
			return true
		}
	}
	return false
}

func (t *Tracker) key(systemUUID string) string { return t.prefix + systemUUID }

// StartOptions open a boot attempt; see [Tracker.Start].
type StartOptions struct {
	// SystemUUID names the system (any case). Required.
	SystemUUID string
	// AttemptID names this boot attempt. Required.
	AttemptID string
	// Timeout is how long the attempt may take. Defaults to the tracker's
	// DefaultTimeout.
	Timeout time.Duration
	// Policy decides completion and may bound single signals
	// (Policy.Deadlines). Defaults to the tracker's DefaultPolicy; a Policy
	// with Deadlines but no Signals takes the default's Mode and Signals.
	Policy Policy
	// AllowedSources are the addresses the machine may fetch and call
	// back from: IPs or CIDR prefixes (see [ParseSources]), typically from
	// the host's DHCP lease data. Fetches and callbacks for this attempt
	// from any other address get 403 and write nothing. Defaults to none
	// (any address).
	AllowedSources []string
}

// StartBoot opens the boot record of attemptID with the default policy; see
// [Tracker.Start]. It implements the job package's BootTracker. Unlike
// Start, it returns nil for an attempt that was already started and then
// replaced by a newer one: the call is a repeat (a job resuming after a
// restart), and BootResult reports that attempt as Canceled, so the job
// ends with a clear reason instead of retrying forever.
func (t *Tracker) StartBoot(ctx context.Context, systemUUID, attemptID string, timeout time.Duration) error {
	_, err := t.Start(ctx, StartOptions{SystemUUID: systemUUID, AttemptID: attemptID, Timeout: timeout})
	if errors.Is(err, ErrStaleAttempt) {
		return nil
	}
	return err
}

// Start opens the boot record of an attempt and returns it. It is
// idempotent: starting the current attempt again returns the record as it is
// (deadline and policy unchanged). Starting a new attempt retires the
// current one into Record.Previous (as Canceled if it had not completed) and
// clears the signals, so callbacks from the old boot no longer count.
// Starting an attempt that was already retired returns ErrStaleAttempt.
func (t *Tracker) Start(ctx context.Context, opts StartOptions) (Record, error) {
	u, err := ParseSystemUUID(opts.SystemUUID)
	if err != nil {
		return Record{}, fmt.Errorf("bootstate: start boot: %w", err)
	}
	if err := ValidateAttemptID(opts.AttemptID); err != nil {
		return Record{}, fmt.Errorf("bootstate: start boot of system %s: %w", u, err)
	}
	pol := opts.Policy
	if pol.IsZero() {
		pol = t.policy
	} else if pol.Mode == "" && len(pol.Signals) == 0 {
		pol.Mode, pol.Signals = t.policy.Mode, t.policy.Signals
	}
	srcs, err := ParseSources(opts.AllowedSources)
	if err != nil {
		return Record{}, fmt.Errorf("bootstate: start boot of system %s: %w", u, err)
	}
	if err := pol.Validate(); err != nil {
		return Record{}, fmt.Errorf("bootstate: start boot of system %s: %w", u, err)
	}
	if pol.Mode == "" {
		pol.Mode = AllOf
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = t.timeout
	}
	var created bool
	rec, _, err := t.update(ctx, u, true, func(rec *Record, exists bool) (bool, error) {
		created = false
		if exists && rec.AttemptID == opts.AttemptID {
			return false, nil
		}
		if exists {
			if _, ok := rec.previous(opts.AttemptID); ok {
				return false, fmt.Errorf("bootstate: %w: attempt %q of system %s was replaced by attempt %q", ErrStaleAttempt, opts.AttemptID, u, rec.AttemptID)
			}
		}
		now := t.clock.Now().UTC()
		prev := t.retire(rec, exists, opts.AttemptID)
		*rec = Record{
			SystemUUID:     u,
			AttemptID:      opts.AttemptID,
			Policy:         pol,
			StartedAt:      now,
			Deadline:       now.Add(timeout),
			AllowedSources: srcs,
			Previous:       prev,
		}
		rec.evaluate(now)
		created = true
		return true, nil
	})
	if err != nil {
		return Record{}, err
	}
	if created {
		t.log.V(1).Info("boot attempt started", "systemUUID", u, "attemptID", rec.AttemptID, "deadline", rec.Deadline, "policy", rec.Policy.String())
	}
	t.queueDeadline(rec)
	return rec, nil
}

// queueDeadline queues the next deadline of an open attempt for Run.
func (t *Tracker) queueDeadline(rec Record) {
	if !rec.Completed() {
		t.deadlines.add(deadline{at: rec.NextDeadline(), systemUUID: rec.SystemUUID, attemptID: rec.AttemptID})
	}
}

// retire returns the history list with the current attempt (if any)
// prepended, trimmed to the history limit.
func (t *Tracker) retire(rec *Record, exists bool, next string) []PreviousAttempt {
	if !exists {
		return nil
	}
	p := PreviousAttempt{AttemptID: rec.AttemptID, StartedAt: rec.StartedAt, Result: rec.Result, Message: rec.Message()}
	if !rec.Completed() {
		p.Result = conditions.ResultCanceled
		p.Message = fmt.Sprintf("superseded by attempt %q before it completed (%s)", next, rec.waitingMessage())
	}
	out := append([]PreviousAttempt{p}, rec.Previous...)
	if len(out) > t.history {
		out = out[:t.history]
	}
	return out
}

// Get returns the system's boot record (lower-case UUID or not), or an error
// wrapping ErrUnknownSystem.
func (t *Tracker) Get(ctx context.Context, systemUUID string) (Record, error) {
	u, err := ParseSystemUUID(systemUUID)
	if err != nil {
		return Record{}, fmt.Errorf("bootstate: %w", err)
	}
	rec, err := t.read(ctx, u)
	return rec, err
}

// BootResult reports an attempt's state for the job package's wait-for-boot
// task: done is false while the attempt is waiting; once done, result is
// Succeeded, TimedOut, or Canceled (a newer attempt replaced it, or the
// record does not know the attempt at all) and message says why. A system
// without any record is an error wrapping ErrUnknownSystem (StartBoot was
// not called); store failures wrap ErrStore. An attempt past its deadline is marked TimedOut here if nothing
// else did it yet, so jobs time out even when Run is not running.
func (t *Tracker) BootResult(ctx context.Context, systemUUID, attemptID string) (bool, conditions.Result, string, error) {
	rec, err := t.expire(ctx, systemUUID, attemptID)
	if err != nil {
		return false, "", "", err
	}
	if rec.AttemptID != attemptID {
		if p, ok := rec.previous(attemptID); ok {
			return true, p.Result, p.Message, nil
		}
		return true, conditions.ResultCanceled, fmt.Sprintf("boot attempt %q of system %s is neither current (%q) nor among the %d most recent ones: it was never started or was superseded long ago",
			attemptID, rec.SystemUUID, rec.AttemptID, t.history), nil
	}
	if !rec.Completed() {
		return false, "", rec.Message(), nil
	}
	return true, rec.Result, rec.Message(), nil
}

// Wait blocks until the attempt completed and returns its record (read
// Result and Message()), or returns ctx's error, or an error wrapping
// ErrStaleAttempt if a newer attempt replaced it. It does not busy-poll:
// writes by this tracker wake it at once, the deadline wakes it through the
// clock, and writes by other processes are seen within PollInterval.
func (t *Tracker) Wait(ctx context.Context, systemUUID, attemptID string) (Record, error) {
	u, err := ParseSystemUUID(systemUUID)
	if err != nil {
		return Record{}, fmt.Errorf("bootstate: %w", err)
	}
	for {
		changed := t.notify.watch(t.key(u))
		rec, err := t.expire(ctx, u, attemptID)
		if err != nil {
			return Record{}, err
		}
		if rec.AttemptID != attemptID {
			msg := "it is unknown to the record"
			if p, ok := rec.previous(attemptID); ok {
				msg = p.Message
			}
			return Record{}, fmt.Errorf("bootstate: %w: system %s is on attempt %q, not %q: %s", ErrStaleAttempt, u, rec.AttemptID, attemptID, msg)
		}
		if rec.Completed() {
			return rec, nil
		}
		wait := min(rec.NextDeadline().Sub(t.clock.Now()), t.poll)
		select {
		case <-ctx.Done():
			return Record{}, ctx.Err()
		case <-changed:
		case <-t.clock.After(wait):
		}
	}
}

// expire reads the record and, when attemptID is its current attempt, not
// completed and past its deadline, marks it TimedOut and fires OnTimeout.
func (t *Tracker) expire(ctx context.Context, systemUUID, attemptID string) (Record, error) {
	u, err := ParseSystemUUID(systemUUID)
	if err != nil {
		return Record{}, fmt.Errorf("bootstate: %w", err)
	}
	var timedOut bool
	rec, _, err := t.update(ctx, u, false, func(rec *Record, _ bool) (bool, error) {
		timedOut = false
		if rec.AttemptID != attemptID || rec.Completed() {
			return false, nil
		}
		if _, passed := rec.passedDeadline(t.clock.Now()); !passed {
			return false, nil
		}
		changed, to := rec.evaluate(t.clock.Now().UTC())
		timedOut = to
		return changed, nil
	})
	if err != nil {
		return Record{}, err
	}
	if timedOut {
		t.timedOut(ctx, rec)
	}
	return rec, nil
}

func (t *Tracker) timedOut(ctx context.Context, rec Record) {
	t.log.Info("boot attempt timed out", "systemUUID", rec.SystemUUID, "attemptID", rec.AttemptID, "message", rec.Message())
	t.observeEnd(rec, t.obs.BootTimedOut)
	if t.onTimeout != nil {
		t.onTimeout(ctx, rec)
	}
}

// RecordSignal records a signal for the system's attempt attemptID (empty:
// the current attempt) and applies the policy. Hosts call it for their own
// signals; it checks neither tokens nor source addresses. Repeating a
// signal already recorded writes nothing. Signals for a retired attempt
// return ErrStaleAttempt; for a system without a record, ErrUnknownSystem;
// for an attempt that already ended without booting, ErrAttemptEnded; all
// three write nothing, except that a deadline that passed and was not yet
// applied is applied (the attempt is marked TimedOut, as BootResult would),
// and the late signal itself is not recorded.
func (t *Tracker) RecordSignal(ctx context.Context, systemUUID, attemptID, signal, message string) (Record, error) {
	return t.recordSignal(ctx, systemUUID, attemptID, signal, message, "")
}

// recordSignal is RecordSignal; a non-empty source (the caller's IP) is
// checked against the attempt's AllowedSources inside the same
// compare-and-swap, before anything is written.
func (t *Tracker) recordSignal(ctx context.Context, systemUUID, attemptID, signal, message, source string) (Record, error) {
	u, err := ParseSystemUUID(systemUUID)
	if err != nil {
		return Record{}, fmt.Errorf("bootstate: %w", err)
	}
	if err := ValidateSignal(signal); err != nil {
		return Record{}, fmt.Errorf("bootstate: %w", err)
	}
	if message == "" {
		message = signal + " received"
	}
	var timedOut, completed bool
	rec, wrote, err := t.update(ctx, u, false, func(rec *Record, _ bool) (bool, error) {
		timedOut, completed = false, false
		// The address first: a caller at the wrong address learns nothing
		// about the attempts (not even that its attempt is stale).
		if source != "" && !sourceAllowed(rec.AllowedSources, source) {
			return false, fmt.Errorf("bootstate: %w: %s from %s for system %s attempt %q (allowed: %s)", ErrSourceNotAllowed, signal, source, u, rec.AttemptID, strings.Join(rec.AllowedSources, ", "))
		}
		if attemptID != "" && rec.AttemptID != attemptID {
			return false, fmt.Errorf("bootstate: %w: system %s is on attempt %q, signal %s was for attempt %q", ErrStaleAttempt, u, rec.AttemptID, signal, attemptID)
		}
		if rec.Completed() && rec.Result != conditions.ResultSucceeded {
			return false, fmt.Errorf("bootstate: %w: %s for system %s attempt %q arrived after it ended as %s: %s", ErrAttemptEnded, signal, u, rec.AttemptID, rec.Result, rec.Message())
		}
		if rec.HasSignal(signal) {
			return false, nil
		}
		now := t.clock.Now().UTC()
		// A passed deadline is applied first, and the late signal does
		// not count (nor is it recorded).
		if _, timedOut = rec.evaluate(now); timedOut {
			return true, nil
		}
		conditions.Set(&rec.Conditions, conditions.Condition{
			Type: signal, Status: conditions.True, Reason: ReasonSignalReceived, Message: message, LastTransitionTime: timestamp.New(now),
		})
		wasDone := rec.Completed()
		rec.evaluate(now)
		completed = !wasDone && rec.Completed()
		return true, nil
	})
	if err != nil {
		return Record{}, err
	}
	if timedOut {
		t.timedOut(ctx, rec)
		return rec, fmt.Errorf("bootstate: %w: %s for system %s attempt %q arrived after its deadline: %s", ErrAttemptEnded, signal, u, rec.AttemptID, rec.Message())
	}
	if wrote {
		t.log.V(1).Info("boot signal recorded", "systemUUID", u, "attemptID", rec.AttemptID, "signal", signal)
		t.queueDeadline(rec) // a stage measured from this signal is armed now
		t.observeSignal(rec, signal)
	}
	if completed {
		t.observeEnd(rec, t.obs.BootCompleted)
		t.log.Info("boot attempt completed", "systemUUID", u, "attemptID", rec.AttemptID, "result", rec.Result)
	}
	return rec, nil
}

// update reads the record of u, applies fn and writes the result through
// [storage.Modify], which retries on conflicts until ctx ends. fn reports
// whether it changed the record; exists is false only when create is set
// and there is no record (fn then fills a new one). Without create, a
// missing record is ErrUnknownSystem. It returns the record as stored and
// whether it wrote.
func (t *Tracker) update(ctx context.Context, u string, create bool, fn func(rec *Record, exists bool) (bool, error)) (Record, bool, error) {
	key := t.key(u)
	var (
		rec     Record
		changed bool
	)
	stored, err := storage.Modify(ctx, t.store, key, func(cur *storage.Record) ([]byte, error) {
		rec, changed = Record{}, false
		if cur == nil && !create {
			return nil, &ownError{fmt.Errorf("bootstate: system %s: %w", u, ErrUnknownSystem)}
		}
		if cur != nil {
			var err error
			if rec, err = decode(*cur); err != nil {
				return nil, &ownError{err}
			}
		}
		var err error
		if changed, err = fn(&rec, cur != nil); err != nil {
			return nil, &ownError{err}
		}
		if !changed {
			return nil, storage.ErrNoChange
		}
		val, err := json.Marshal(&rec)
		if err != nil {
			return nil, &ownError{fmt.Errorf("bootstate: encode record of system %s: %w", u, err)}
		}
		return val, nil
	})
	var own *ownError
	if errors.As(err, &own) {
		return Record{}, false, own.err
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("bootstate: update record of system %s: %w: %w", u, ErrStore, err)
	}
	rec.Revision = stored.Revision
	if changed {
		t.notify.notify(key)
	}
	return rec, changed, nil
}

// ownError carries an error of update's own (not the store's) through
// storage.Modify, which returns it as is.
type ownError struct{ err error }

func (e *ownError) Error() string { return e.err.Error() }

// read returns the record of u.
func (t *Tracker) read(ctx context.Context, u string) (Record, error) {
	r, err := t.store.Get(ctx, t.key(u))
	if errors.Is(err, storage.ErrNotFound) {
		return Record{}, fmt.Errorf("bootstate: system %s: %w", u, ErrUnknownSystem)
	}
	if err != nil {
		return Record{}, fmt.Errorf("bootstate: read record of system %s: %w: %w", u, ErrStore, err)
	}
	return decode(r)
}

// decode parses a stored boot record.
func decode(r storage.Record) (Record, error) {
	var rec Record
	if err := json.Unmarshal(r.Value, &rec); err != nil {
		return Record{}, fmt.Errorf("bootstate: decode record %q: %w: %w", r.Key, ErrCorruptRecord, err)
	}
	rec.Revision = r.Revision
	return rec, nil
}
