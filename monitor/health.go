package monitor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

// This file is the monitor's health: what a refresh records of the health
// the BMC reports (docs/health-events.md, "Monitor"), the Healthy condition
// and the HealthChanged event.

// TypeHealthy is the condition type the monitor keeps on a machine once its
// BMC reported health: True (reason [ReasonHealthOK] or
// [ReasonHealthWarning]), False at Critical ([ReasonHealthCritical]),
// Unknown when the BMC reports none ([ReasonHealthUnknown]). The message
// names the resources that are not OK and their faults.
const TypeHealthy = "Healthy"

// Reasons of the Healthy condition: the worst health of the system, its
// chassis and its managers, as last read ([Health.Worst]).
const (
	ReasonHealthOK       = "OK"
	ReasonHealthWarning  = "Warning"
	ReasonHealthCritical = "Critical"
	// ReasonHealthUnknown: the BMC reports no health for the system, its
	// chassis or its managers.
	ReasonHealthUnknown = "HealthUnknown"
)

// DefaultHealthEvery is Config.HealthEvery's default: every 10th refresh
// (30 minutes at the default Interval).
const DefaultHealthEvery = 10

// Health is the health the BMC last reported for a machine. The system's
// own health comes with every read where the driver gives it with the
// power state (bmc.SystemStatusReader: the same request); the chassis and
// managers come from the full report (bmc.HealthReader), read every
// Config.HealthEvery refreshes.
type Health struct {
	// System is the system's Health and Rollup (Redfish: the Health and
	// HealthRollup of its Status), with the faults the BMC names.
	System bmc.ResourceHealth `json:"system"`
	// Chassis and Managers are as of ReportTime (nil before the first full
	// report, and where the BMC reports none).
	Chassis  []bmc.ResourceHealth `json:"chassis,omitempty"`
	Managers []bmc.ResourceHealth `json:"managers,omitempty"`
	// Sensors are the BMC's sensor readings as of ReportTime (IPMI: the
	// SDR repository's sensors; read only with Config.FullHealth where the
	// power read carries the system's health, as IPMI's does). Their
	// health does not change the Healthy condition (docs/health-events.md,
	// "Sensor readings").
	Sensors []bmc.SensorReading `json:"sensors,omitempty"`
	// ReadTime is when System was read (by the reading replica's clock).
	ReadTime time.Time `json:"readTime,omitzero"`
	// ReportTime is when the full report (chassis and managers) was last
	// read; zero if never.
	ReportTime time.Time `json:"reportTime,omitzero"`
	// ReportSeq is the Refresh.Seq of the refresh that last tried the full
	// report (answered or not): the next is due HealthEvery claims later,
	// whichever replica makes them (no clock is compared).
	ReportSeq int64 `json:"reportSeq,omitempty"`
}

// Worst is the worst health of the system, its chassis and its managers
// (Health and Rollup each): Critical, then Warning, then OK; HealthUnknown
// when none reports any.
func (h *Health) Worst() bmc.Health {
	if h == nil {
		return bmc.HealthUnknown
	}
	w := bmc.HealthUnknown
	h.each(func(_ string, r bmc.ResourceHealth) {
		w = worse(w, worse(r.Health, r.Rollup))
	})
	return w
}

// clone is a deep copy of h.
func (h Health) clone() Health {
	cp := func(rs []bmc.ResourceHealth) []bmc.ResourceHealth {
		if rs == nil {
			return nil
		}
		out := make([]bmc.ResourceHealth, len(rs))
		for i, r := range rs {
			r.Faults = slices.Clone(r.Faults)
			out[i] = r
		}
		return out
	}
	h.System.Faults = slices.Clone(h.System.Faults)
	h.Chassis, h.Managers = cp(h.Chassis), cp(h.Managers)
	h.Sensors = bmc.CloneSensors(h.Sensors)
	return h
}

// each calls f with every resource, named for messages ("system 1").
func (h *Health) each(f func(name string, r bmc.ResourceHealth)) {
	f("system "+h.System.ID, h.System)
	for _, c := range h.Chassis {
		f("chassis "+c.ID, c)
	}
	for _, m := range h.Managers {
		f("manager "+m.ID, m)
	}
}

func rank(h bmc.Health) int {
	switch h {
	case bmc.HealthOK:
		return 1
	case bmc.HealthWarning:
		return 2
	case bmc.HealthCritical:
		return 3
	}
	return 0
}

func worse(a, b bmc.Health) bmc.Health {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// Healthy returns the Healthy condition, or nil before the record has one.
func (m *Machine) Healthy() *conditions.Condition {
	return conditions.Get(m.Status.Conditions, TypeHealthy)
}

// healthCondition is the Healthy condition h calls for.
func healthCondition(h *Health, gen int64, now time.Time) conditions.Condition {
	c := conditions.Condition{Type: TypeHealthy, ObservedGeneration: gen, LastTransitionTime: timestamp.New(now)}
	var bad []string
	h.each(func(name string, r bmc.ResourceHealth) {
		w := worse(r.Health, r.Rollup)
		if rank(w) < 2 {
			return
		}
		s := name + " " + string(w)
		if len(r.Faults) > 0 {
			s += " (" + strings.Join(r.Faults, ", ") + ")"
		}
		bad = append(bad, s)
	})
	switch w := h.Worst(); w {
	case bmc.HealthCritical:
		c.Status, c.Reason = conditions.False, ReasonHealthCritical
	case bmc.HealthWarning:
		c.Status, c.Reason = conditions.True, ReasonHealthWarning
	case bmc.HealthOK:
		c.Status, c.Reason, c.Message = conditions.True, ReasonHealthOK, "the BMC reports OK"
	default:
		c.Status, c.Reason, c.Message = conditions.Unknown, ReasonHealthUnknown, "the BMC reports no health"
	}
	if len(bad) > 0 {
		c.Message = clip(strings.Join(bad, "; "), 1024)
	}
	return c
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// reading is what one refresh read of the BMC's health.
type reading struct {
	// system is the system's health from the power read (sysKnown: the
	// driver gave one, bmc.SystemStatusReader, and it was not unknown).
	system   bmc.ResourceHealth
	sysRead  bool
	sysKnown bool
	// report is the full report, when it was read (reportTried: asked
	// for, reportErr its error).
	report      *bmc.HealthReport
	reportTried bool
	reportErr   error
	// rotation: the read used the pending credentials of a rotation
	// (bmc.PendingFallback).
	rotation bool
}

// healthDue says whether the refresh of claim seq reads the full report
// (bmc.HealthReader) when the power read did not give the system's health
// (or always, with Config.FullHealth).
func (m *Monitor) healthDue(mc *Machine) bool {
	if m.cfg.HealthEvery < 0 {
		return false
	}
	h := mc.Status.Health
	return h == nil || h.ReportSeq == 0 || mc.Refresh.Seq-h.ReportSeq >= int64(m.cfg.HealthEvery)
}

// applyHealth records rd on mc (a successful read) and returns the worst
// health before and after.
func applyHealth(mc *Machine, rd reading, seq int64, now time.Time) (before, after bmc.Health, changed bool) {
	if !rd.sysRead && !rd.reportTried {
		return "", "", false
	}
	before = mc.Status.Health.Worst()
	h := Health{}
	if mc.Status.Health != nil {
		h = *mc.Status.Health
	}
	if rd.sysRead {
		h.System, h.ReadTime = rd.system, now.UTC()
	}
	if rd.reportTried {
		h.ReportSeq = seq
	}
	if rd.report != nil {
		if !rd.sysKnown {
			h.System, h.ReadTime = rd.report.System, now.UTC()
		}
		h.Chassis, h.Managers, h.ReportTime = rd.report.Chassis, rd.report.Managers, now.UTC()
		h.Sensors = rd.report.Sensors
	}
	mc.Status.Health = &h
	after = h.Worst()
	if after != bmc.HealthUnknown || mc.Healthy() != nil {
		// A BMC that never reported health gets no condition.
		conditions.Set(&mc.Status.Conditions, healthCondition(&h, mc.Generation, now))
	}
	return before, after, true
}

// healthMessage is a short text for logs.
func healthMessage(from, to bmc.Health) string {
	name := func(h bmc.Health) string {
		if h == bmc.HealthUnknown {
			return "unknown"
		}
		return string(h)
	}
	return fmt.Sprintf("%s -> %s", name(from), name(to))
}
