package monitor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/timestamp"
)

// refreshJob is what the loop hands a refresh: the record as it last saw it.
type refreshJob struct {
	key   string
	rec   *Machine // not modified: a refresh works on a copy
	rev   int64
	ep    bmc.Endpoint
	force bool
	// events: this system does its BMC's event work (eventleader.go).
	events bool
}

type outcomeKind int

const (
	outcomeRead       outcomeKind = iota // claimed and read (answered or not)
	outcomeLost                          // another writer changed the record first
	outcomeDeferred                      // a job on another runner holds the system
	outcomeGone                          // the record was deleted
	outcomeStoreError                    // the store failed; try again later
)

// outcome is a refresh's result for the loop.
type outcome struct {
	key  string
	kind outcomeKind
	rec  *Machine // the record as last written or read; nil if unknown
	rev  int64
	hash string // outcomeRead: the credentials used
	seq  int64  // outcomeRead: the claim's Seq
}

// refresh claims the machine's next interval by compare-and-swap, reads the
// BMC (one PowerState call through the shared pool) and writes the result.
func (m *Monitor) refresh(ctx context.Context, j refreshJob) outcome {
	o := outcome{key: j.key}
	if busy, err := m.heldElsewhere(ctx, j.rec.System); err != nil {
		return m.storeFailed(ctx, o, "reading the system's job lock", err)
	} else if busy {
		m.deferred.Add(1)
		o.kind = outcomeDeferred
		return o
	}

	// Claim.
	now := m.cfg.Clock.Now()
	claimed := *j.rec.copy()
	next := m.jittered()
	if j.rec.Refresh.Owner == "" {
		next = m.spread()
	}
	claimed.Refresh = Refresh{Owner: m.cfg.Owner, Seq: j.rec.Refresh.Seq + 1, Claimed: now.UTC(), Next: now.Add(next).UTC()}
	// The read is made right after this claim is stored: its time is the
	// attempt's, written with the claim (a failed read that changes
	// nothing then writes nothing more).
	claimed.Status.LastAttemptTime = now.UTC()
	data, err := encode(&claimed)
	if err != nil {
		return m.storeFailed(ctx, o, "encoding the claim", err)
	}
	rev, err := m.cfg.Store.Update(ctx, j.key, data, j.rev)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
			m.lost.Add(1)
			return m.reload(ctx, o)
		}
		return m.storeFailed(ctx, o, "claiming the refresh", err)
	}
	m.setOwn(j.key, rev)
	o.rec, o.rev = &claimed, rev

	// Read.
	power, rd, creds, hash, readErr, timedOut := m.read(ctx, j.ep, claimed.CredentialsRef, m.healthDue(&claimed))
	if ctx.Err() != nil {
		o.kind = outcomeLost // stopping: the claim stands, the next read is due at its Next
		return o
	}
	m.reads.Add(1)
	o.kind, o.hash, o.seq = outcomeRead, hash, claimed.Refresh.Seq

	// Result.
	result := claimed.copy()
	changed, hc := m.apply(result, j.ep, power, rd, readErr, timedOut, creds.Password)
	if !changed {
		return o // a failure like the last one: the claim recorded the attempt
	}
	// The record's critical-event part belongs to the event follower
	// (critical.go): kept as found, so a concurrent write is not lost.
	o = m.commit(ctx, o, &claimed, func(mc *Machine) { mc.Status = result.Status.withCriticalEventsOf(mc.Status) })
	if o.kind != outcomeRead || !m.claimStands(o.rec, &claimed) {
		return o // gone, or the record changed under the claim: no more
	}
	m.healthChanged(hc, o.rec)

	// Beside the power read, on the same claim and session.
	if readErr == nil {
		if j.events {
			m.bmcEvents(ctx, j.ep, creds, claimed.Refresh.Seq)
		}
		if m.inventoryDue(o.rec, m.cfg.Clock.Now()) {
			o = m.refreshInventory(ctx, j, o, creds)
		}
	}
	return o
}

// commit writes change onto o.rec (the record as this refresh last wrote
// it, at o.rev) by compare-and-swap; if someone wrote the record since (Add
// changed it, or it was removed), change is applied to the current record
// only if claimed's claim and generation still stand. The outcome carries
// the record as written or found (outcomeGone if it was deleted); a store
// failure is logged and leaves o as it was: the next refresh writes again.
func (m *Monitor) commit(ctx context.Context, o outcome, claimed *Machine, change func(*Machine)) outcome {
	next := o.rec.copy()
	change(next)
	data, err := encode(next)
	if err != nil {
		m.log.Error(err, "encoding a machine's status failed", "system", claimed.System)
		return o
	}
	rev, err := m.cfg.Store.Update(ctx, o.key, data, o.rev)
	if err == nil {
		m.setOwn(o.key, rev)
		o.rec, o.rev = next, rev
		return o
	}
	if !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
		m.log.Error(err, "writing a machine's status failed; the next read will write it", "system", claimed.System)
		return o
	}
	var final *Machine
	rec, err := storage.Modify(ctx, m.cfg.Store, o.key, func(cur *storage.Record) ([]byte, error) {
		final = nil
		if cur == nil {
			return nil, storage.ErrNoChange
		}
		mc, err := Decode(cur.Value)
		if err != nil {
			return nil, err
		}
		final = mc
		if !m.claimStands(mc, claimed) {
			return nil, storage.ErrNoChange
		}
		change(mc)
		return encode(mc)
	})
	if err != nil {
		m.log.Error(err, "writing a machine's status failed; the next read will write it", "system", claimed.System)
		return o
	}
	if final == nil {
		o.kind = outcomeGone
		return o
	}
	m.setOwn(o.key, rec.Revision)
	o.rec, o.rev = final, rec.Revision
	return o
}

// claimStands reports whether mc is still under this replica's claim of
// claimed, for the same generation.
func (m *Monitor) claimStands(mc, claimed *Machine) bool {
	return mc.Refresh.Owner == m.cfg.Owner && mc.Refresh.Seq == claimed.Refresh.Seq && mc.Generation == claimed.Generation
}

// copy is a copy of mc whose Status.Conditions may be changed in place
// (conditions.Set) without touching mc's.
func (mc *Machine) copy() *Machine {
	c := *mc
	c.Status.Conditions = append([]conditions.Condition(nil), mc.Status.Conditions...)
	return &c
}

// healthChanged reports hc (nil: no change), now that mc, which holds it,
// is stored: by the replica that stored it, once.
func (m *Monitor) healthChanged(hc *HealthEvent, mc *Machine) {
	if hc == nil || mc.Status.Health == nil {
		return
	}
	m.healthCh.Add(1)
	hc.Health = mc.Status.Health.clone()
	msg := ""
	if c := mc.Healthy(); c != nil {
		msg = c.Message
	}
	m.log.Info("machine health changed", "system", mc.System, "health", healthMessage(hc.From, hc.To), "message", msg)
	emit(m.log, m.cfg.Observer.HealthChanged, *hc)
}

// read resolves the credentials and reads the power state (through
// [Monitor.withDriver]). Where the driver gives the system's health with
// the power state (bmc.SystemStatusReader) it is read in the same request;
// the full health report is read too when wantReport and the power read did
// not carry the system's health (or always, with Config.FullHealth).
func (m *Monitor) read(ctx context.Context, ep bmc.Endpoint, ref string, wantReport bool) (power bmc.PowerState, rd reading, creds bmc.Credentials, hash string, err error, timedOut bool) {
	rctx, cancel := context.WithTimeout(ctx, m.cfg.ReadTimeout)
	defer cancel()
	creds, cerr := m.cfg.Credentials.Resolve(rctx, ref)
	hash = credsHash(creds, cerr)
	if cerr != nil {
		return "", rd, bmc.Credentials{}, hash, &credentialsError{ref: ref, err: cerr}, false
	}
	// The pending credentials of a rotation when the current ones are
	// refused (rd.rotation, set once Try returned).
	creds, rd.rotation, err = m.pending.Try(rctx, m.cfg.Credentials, ref, creds, func(c bmc.Credentials) error {
		return m.withDriver(ctx, rctx, ep, c, func(drv bmc.Driver) error {
			return m.readWith(rctx, ep, drv, wantReport, &power, &rd, c.Password)
		})
	})
	timedOut = err != nil && ctx.Err() == nil && rctx.Err() != nil
	return power, rd, creds, hash, err, timedOut
}

// readWith is read's reading on drv, into power and rd.
func (m *Monitor) readWith(rctx context.Context, ep bmc.Endpoint, drv bmc.Driver, wantReport bool, power *bmc.PowerState, rd *reading, password string) error {
	var err error
	*power, *rd, err = readPower(rctx, drv)
	if err != nil || !wantReport || (rd.sysKnown && !m.cfg.FullHealth) {
		return err
	}
	if hr, ok := drv.(bmc.HealthReader); ok {
		rd.reportTried = true
		r, herr := hr.Health(rctx)
		if herr == nil {
			rd.report = &r
		} else {
			// Health is not reachability: the power read stands.
			rd.reportErr = herr
			m.log.V(1).Info("reading the BMC's health failed; will try again in HealthEvery refreshes", "system", ep.SystemKey(), "error", scrub(herr.Error(), password))
		}
	}
	return nil
}

// withDriver calls f with the pool's driver for ep (rctx bounds the Get and
// f), and once more on a new session when the pooled one turns out to be
// spent (an error wrapping bmc.ErrSessionExpired: it expired, or a job's
// end closed it under the read). Every request the monitor makes goes
// through it: the jobs' pool, its sessions and its request budget.
func (m *Monitor) withDriver(ctx, rctx context.Context, ep bmc.Endpoint, creds bmc.Credentials, f func(bmc.Driver) error) error {
	for attempt := 0; ; attempt++ {
		drv, err := m.pool.Get(rctx, ep, creds)
		if err == nil {
			err = f(drv)
		}
		if err != nil && attempt == 0 && errors.Is(err, bmc.ErrSessionExpired) && rctx.Err() == nil {
			m.pool.Invalidate(ctx, ep) // the next Get dials again
			continue
		}
		return err
	}
}

// readPower reads the power state, with the system's health where the
// driver gives both in one request.
func readPower(ctx context.Context, drv bmc.Driver) (bmc.PowerState, reading, error) {
	var rd reading
	sr, ok := drv.(bmc.SystemStatusReader)
	if !ok {
		p, err := drv.PowerState(ctx)
		return p, rd, err
	}
	st, err := sr.SystemStatus(ctx)
	if err != nil {
		return st.Power, rd, err
	}
	rd.system, rd.sysRead = st.Health, true
	rd.sysKnown = st.Health.Health != bmc.HealthUnknown || st.Health.Rollup != bmc.HealthUnknown
	return st.Power, rd, nil
}

// apply records a read's result on mc and reports whether the record
// changed.
// A change of the worst health is returned as an event to report once the
// record is stored.
func (m *Monitor) apply(mc *Machine, ep bmc.Endpoint, power bmc.PowerState, rd reading, err error, timedOut bool, password string) (bool, *HealthEvent) {
	now := m.cfg.Clock.Now()
	c := conditions.Condition{Type: TypeContactable, ObservedGeneration: mc.Generation, LastTransitionTime: timestamp.New(now)}
	changed := mc.Status.ObservedGeneration != mc.Generation
	var hc *HealthEvent
	mc.Status.ObservedGeneration = mc.Generation
	if err == nil {
		c.Status, c.Reason, c.Message = conditions.True, ReasonContacted, bmc.RedactURL(mc.BMC)+" answered"
		if rd.rotation {
			c.Reason, c.Message = ReasonRotationInProgress, bmc.RedactURL(mc.BMC)+" answered to the pending credentials of a rotation in progress (it refused the current ones)"
		}
		mc.Status.Power = power
		mc.Status.LastReadTime = now.UTC()
		changed = true
		if from, to, ok := applyHealth(mc, rd, mc.Refresh.Seq, now); ok && from != to {
			hc = &HealthEvent{System: mc.System, BMC: bmc.RedactURL(mc.BMC), From: from, To: to, Time: now.UTC()}
		}
	} else {
		m.failed.Add(1)
		var ce *credentialsError
		if errors.As(err, &ce) {
			c.Reason, c.Message = ReasonCredentialsUnresolved, "resolving credentials "+fmt.Sprintf("%q", ce.ref)+" for "+bmc.RedactURL(mc.BMC)+": "+ce.err.Error()
		} else {
			c.Reason, c.Message = classify(ep, bmc.RedactURL(mc.BMC), err, timedOut)
		}
		c.Status, c.Message = conditions.False, scrub(c.Message, password)
	}
	prev := mc.Contactable()
	var before conditions.Condition
	if prev != nil {
		before = *prev
	}
	if conditions.Set(&mc.Status.Conditions, c) {
		changed = true
		if before.Status != c.Status || before.Reason != c.Reason {
			m.log.Info("machine contactable changed", "system", mc.System, "status", string(c.Status), "reason", c.Reason, "message", c.Message)
		}
	}
	if err != nil {
		m.log.V(1).Info("machine read failed", "system", mc.System, "reason", c.Reason, "error", c.Message)
	}
	return changed, hc
}

// credentialsError is a failed resolution of a machine's credentials.
type credentialsError struct {
	ref string
	err error
}

func (e *credentialsError) Error() string {
	return fmt.Sprintf("resolving credentials %q: %v", e.ref, e.err)
}

func (e *credentialsError) Unwrap() error { return e.err }

// credsHash identifies a credentials version in memory (never stored or
// logged), as connpool.Pool does.
func credsHash(c bmc.Credentials, err error) string {
	if err != nil {
		return "unresolved"
	}
	h := sha256.Sum256([]byte(c.Username + "\x00" + c.Password))
	return hex.EncodeToString(h[:])
}

// heldElsewhere reports whether a job holds system under a lease owned by
// another runner (not this monitor's Owner) that has not expired by this
// monitor's observation: the monitor then stays away, or it would open a
// second session next to that job's.
func (m *Monitor) heldElsewhere(ctx context.Context, system string) (bool, error) {
	info, err := syslock.Read(ctx, m.cfg.Store, system)
	if err != nil {
		return false, err
	}
	if info.Holder == "" || info.Owner == "" || info.Owner == m.cfg.Owner {
		m.mu.Lock()
		delete(m.locks, system)
		m.mu.Unlock()
		return false, nil
	}
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	seen, ok := m.locks[system]
	if !ok || seen.rev != info.Revision {
		m.locks[system] = lockSeen{rev: info.Revision, at: now}
		return true, nil
	}
	return now.Sub(seen.at) < info.Lease, nil
}

// reload reads the record after a lost claim, for the loop.
func (m *Monitor) reload(ctx context.Context, o outcome) outcome {
	rec, err := m.cfg.Store.Get(ctx, o.key)
	if errors.Is(err, storage.ErrNotFound) {
		o.kind = outcomeGone
		return o
	}
	if err != nil {
		return m.storeFailed(ctx, o, "re-reading the record after a lost claim", err)
	}
	mc, err := Decode(rec.Value)
	if err != nil {
		return m.storeFailed(ctx, o, "decoding the record", err)
	}
	o.kind, o.rec, o.rev = outcomeLost, mc, rec.Revision
	return o
}

func (m *Monitor) storeFailed(ctx context.Context, o outcome, what string, err error) outcome {
	if ctx.Err() == nil {
		m.log.Error(err, what+" failed; will retry", "key", o.key)
	}
	o.kind = outcomeStoreError
	return o
}
