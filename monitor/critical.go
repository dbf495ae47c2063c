package monitor

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage"
)

// This file turns critical BMC events into a condition on the machine
// records (Config.Events; docs/health-events.md, "BMC events in the
// monitor"): a goroutine of Start follows the event store and writes the
// CriticalBMCEvent condition with storage.Modify, applying only events
// newer than the record's watermark (Status.CriticalEvents), so replicas
// following one store write it once.

// TypeCriticalBMCEvent is the condition a critical BMC event sets on its
// machines' records: bmcevents.TypeCriticalEvent, True with reason
// "Critical" (bmcevents.CriticalEvents.Condition). Events are history:
// the monitor never sets it back; a host removes it when an operator has
// dealt with it.
const TypeCriticalBMCEvent = bmcevents.TypeCriticalEvent

// EventFollower reports the BMC events stored since its previous call.
// *bmcevents.Follower implements it:
//
//	mon, _ := monitor.New(monitor.Config{..., Events: bmcevents.NewFollower(store)})
type EventFollower interface {
	// Next returns the events stored since the previous call, in the
	// order they were stored, without blocking (none when nothing was);
	// skipped counts values that did not decode. Events returned with an
	// error are applied. The monitor calls it from one goroutine.
	Next(ctx context.Context) (events []bmcevents.Event, skipped int, err error)
}

var _ EventFollower = (*bmcevents.Follower)(nil)

// CriticalEventStatus is what the CriticalBMCEvent condition of a record
// reflects: how many critical events, and the latest applied, the
// watermark later events are compared with.
type CriticalEventStatus struct {
	// Count counts the critical events applied since the condition last
	// turned True.
	Count int64 `json:"count"`
	// LastReceived and LastEvent name the latest critical event applied:
	// its bmcevents.Event.Received and its log, ID and message ID. Events
	// are applied only when later by (LastReceived, LastEvent).
	LastReceived time.Time `json:"lastReceived"`
	LastEvent    string    `json:"lastEvent,omitempty"`
}

// CriticalEvent is a CriticalBMCEvent condition set on a machine's record
// ([Observer.CriticalEvent]).
type CriticalEvent struct {
	// System is the machine's bmc.Endpoint.SystemKey; BMC its address
	// (never with credentials); Source its [EventSource].
	System, BMC, Source string
	// Events are the critical events applied, oldest first.
	Events []bmcevents.Event
	// Condition is the condition as stored.
	Condition conditions.Condition
}

// maxPendingCritical bounds the critical events kept in memory while
// their records cannot be written (a store outage); beyond it the oldest
// are dropped, and logged.
const maxPendingCritical = 10000

// followEvents follows Config.Events every ScanInterval until ctx ends.
// Critical events whose records could not be written stay pending and are
// applied again on the next round (applying is idempotent).
func (m *Monitor) followEvents(ctx context.Context) {
	var pending []bmcevents.Event
	for {
		m.evQuietAt.Store(0)
		evs, skipped, err := m.cfg.Events.Next(ctx)
		if err != nil && ctx.Err() == nil {
			m.log.Error(err, "reading BMC events failed; will retry")
		}
		if skipped > 0 {
			m.log.V(1).Info("skipped BMC event records that did not decode", "count", skipped)
		}
		for _, ev := range evs {
			if ev.Critical() {
				pending = append(pending, ev)
			}
		}
		if n := len(pending) - maxPendingCritical; n > 0 {
			m.log.Info("too many critical BMC events waiting for their records to be written; dropping the oldest", "dropped", n)
			pending = slices.Delete(pending, 0, n)
		}
		if len(pending) > 0 && ctx.Err() == nil {
			pending = m.applyCritical(ctx, pending)
		}
		timer := m.cfg.Clock.After(m.cfg.ScanInterval)
		m.evQuietAt.Store(m.cfg.Clock.Now().UnixNano()) // for tests on a fake clock
		select {
		case <-ctx.Done():
			return
		case <-timer:
		}
	}
}

// eventTarget is a monitored machine an event source's events may concern.
type eventTarget struct {
	key      string
	systemID string // the system its URL names; "" when it names none
}

// applyCritical sets the CriticalBMCEvent condition for each group of
// bmcevents.Critical(evs) on the records of its machines and returns the
// events still to apply (those of groups whose machines could not all be
// listed or written).
func (m *Monitor) applyCritical(ctx context.Context, evs []bmcevents.Event) []bmcevents.Event {
	recs, err := m.cfg.Store.List(ctx, m.prefix)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Error(err, "listing machine records for critical BMC events failed; will retry", "events", len(evs))
		}
		return evs
	}
	targets := map[string][]eventTarget{}
	for _, r := range recs {
		mc, err := Decode(r.Value)
		if err != nil {
			continue
		}
		ep, err := bmc.ParseEndpoint(mc.BMC)
		if err != nil {
			continue
		}
		src := eventSource(ep)
		targets[src] = append(targets[src], eventTarget{key: r.Key, systemID: systemID(ep)})
	}
	var retry []bmcevents.Event
	for _, g := range bmcevents.Critical(evs) {
		failed := false
		for _, t := range targets[g.Source] {
			var mine []bmcevents.Event
			for _, ev := range g.Events {
				if ev.System == "" || t.systemID == "" || ev.System == t.systemID {
					mine = append(mine, ev)
				}
			}
			if len(mine) == 0 {
				continue
			}
			if err := m.setCritical(ctx, t.key, g.Source, mine); err != nil {
				failed = true
				if ctx.Err() == nil {
					m.log.Error(err, "setting the CriticalBMCEvent condition failed; will retry", "key", t.key)
				}
			}
		}
		if failed {
			retry = append(retry, g.Events...)
		}
	}
	return retry
}

// setCritical applies evs (critical events of source that concern the
// machine) to the record at key: the events later than its watermark set
// the condition, by compare-and-swap on the current record, retried on
// conflict. A record that reflects them all (another replica wrote it) or
// is gone is left alone. The change is reported once it is stored.
func (m *Monitor) setCritical(ctx context.Context, key, source string, evs []bmcevents.Event) error {
	var applied []bmcevents.Event
	var final *Machine
	var bad error
	_, err := storage.Modify(ctx, m.cfg.Store, key, func(cur *storage.Record) ([]byte, error) {
		applied, final, bad = nil, nil, nil
		if cur == nil {
			return nil, storage.ErrNoChange
		}
		mc, err := Decode(cur.Value)
		if err != nil {
			bad = err // not retried: it would fail the same way
			return nil, storage.ErrNoChange
		}
		st := mc.Status.CriticalEvents
		newer := laterThan(st, evs)
		if len(newer) == 0 {
			return nil, storage.ErrNoChange
		}
		c := bmcevents.CriticalEvents{Source: source, Events: newer}.Condition()
		c.ObservedGeneration = mc.Generation
		count := int64(len(newer))
		if st != nil && conditions.IsTrue(mc.Status.Conditions, TypeCriticalBMCEvent) {
			count += st.Count
		}
		conditions.Set(&mc.Status.Conditions, c)
		last := newer[len(newer)-1]
		mc.Status.CriticalEvents = &CriticalEventStatus{Count: count, LastReceived: last.Received.UTC(), LastEvent: eventMark(last)}
		applied, final = newer, mc
		return encode(mc)
	})
	if bad != nil {
		m.log.Error(bad, "skipping an undecodable machine record for a critical BMC event", "key", key)
	}
	if err != nil || final == nil {
		return err
	}
	m.writes.Add(1)
	m.critical.Add(1)
	c := conditions.Get(final.Status.Conditions, TypeCriticalBMCEvent)
	m.log.Info("critical BMC event", "system", final.System, "message", c.Message)
	emit(m.log, m.cfg.Observer.CriticalEvent, CriticalEvent{
		System: final.System, BMC: bmc.RedactURL(final.BMC), Source: source, Events: applied, Condition: *c,
	})
	return nil
}

// laterThan returns the events of evs later than st's watermark, sorted
// oldest first by (Received, eventMark).
func laterThan(st *CriticalEventStatus, evs []bmcevents.Event) []bmcevents.Event {
	var out []bmcevents.Event
	for _, ev := range evs {
		if st == nil || compareEvent(ev.Received, eventMark(ev), st.LastReceived, st.LastEvent) > 0 {
			out = append(out, ev)
		}
	}
	slices.SortStableFunc(out, func(a, b bmcevents.Event) int {
		return compareEvent(a.Received, eventMark(a), b.Received, eventMark(b))
	})
	return out
}

func compareEvent(at time.Time, mark string, bt time.Time, bmark string) int {
	if c := at.Compare(bt); c != 0 {
		return c
	}
	return cmp.Compare(mark, bmark)
}

// eventMark names an event within its receive time: its log, ID and
// message ID.
func eventMark(ev bmcevents.Event) string {
	return ev.Log + "\x00" + ev.ID + "\x00" + ev.MessageID
}

// withCriticalEventsOf returns st with the critical-event part (the
// CriticalBMCEvent condition and CriticalEvents) taken from cur: the
// event follower owns that part, the refresh the rest, so a refresh that
// writes its result over a record the follower changed meanwhile keeps the
// follower's write.
func (st Status) withCriticalEventsOf(cur Status) Status {
	st.Conditions = slices.Clone(st.Conditions)
	st.CriticalEvents = cur.CriticalEvents
	c := conditions.Get(cur.Conditions, TypeCriticalBMCEvent)
	if c == nil {
		conditions.Remove(&st.Conditions, TypeCriticalBMCEvent)
		return st
	}
	if mine := conditions.Get(st.Conditions, TypeCriticalBMCEvent); mine != nil {
		*mine = *c // in place: the conditions' order does not change
	} else {
		st.Conditions = append(st.Conditions, *c)
	}
	return st
}

// systemID is the ID of the Redfish system ep's path names
// (".../Systems/1" gives "1"; iLO's paths may be lower-case), "" when it
// names none (an IPMI address, a Redfish URL without a system).
func systemID(ep bmc.Endpoint) string {
	p := strings.TrimRight(ep.Path, "/")
	i := strings.LastIndex(strings.ToLower(p), "/systems/")
	if i < 0 {
		return ""
	}
	id := p[i+len("/systems/"):]
	if strings.Contains(id, "/") {
		return ""
	}
	return id
}
