package monitor

import (
	"github.com/bmckit/bmckit/conditions"
)

// This file decides which of the monitored systems behind one BMC does the
// BMC's event work (Ensure, the log poll): one per BMC, so a BMC with many
// systems is subscribed and polled once per due refresh, not once per
// system (docs/health-events.md, "BMC events in the monitor").

// index files e under its BMC (ep.Key()) in l.byBMC, moving it if its
// address changed; an address that does not parse is filed nowhere.
func (l *loop) index(e *entry) {
	key := ""
	if e.epErr == nil {
		key = e.ep.Key()
	}
	if key == e.bmcKey {
		return
	}
	l.unindex(e)
	if key == "" {
		return
	}
	set := l.byBMC[key]
	if set == nil {
		set = map[string]*entry{}
		l.byBMC[key] = set
	}
	set[e.key] = e
	e.bmcKey = key
}

// unindex removes e from l.byBMC.
func (l *loop) unindex(e *entry) {
	if e.bmcKey == "" {
		return
	}
	if set := l.byBMC[e.bmcKey]; set != nil {
		delete(set, e.key)
		if len(set) == 0 {
			delete(l.byBMC, e.bmcKey)
		}
	}
	e.bmcKey = ""
}

// eventsLeader reports whether e's refresh does its BMC's event work:
// events are configured and, of the BMC's systems whose Contactable is not
// False (all of them when every one is False), e has the smallest record
// key. Replicas decide from the records they follow and agree once the
// change feed reached them all. Costs O(systems behind the BMC).
func (l *loop) eventsLeader(e *entry) bool {
	if l.m.cfg.Subscriptions == nil && l.m.cfg.EventLogs == nil {
		return false
	}
	set := l.byBMC[e.bmcKey]
	if e.bmcKey == "" || len(set) <= 1 {
		return true
	}
	best, bestUp := "", false
	for k, o := range set {
		up := !conditions.IsFalse(o.rec.Status.Conditions, TypeContactable)
		if best == "" || (up && !bestUp) || (up == bestUp && k < best) {
			best, bestUp = k, up
		}
	}
	return best == e.key
}
