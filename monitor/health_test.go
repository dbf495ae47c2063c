package monitor_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
)

// healthEvents collects HealthChanged events.
type healthEvents struct {
	mu sync.Mutex
	ev []monitor.HealthEvent
}

func (h *healthEvents) observer() monitor.Observer {
	return monitor.Observer{HealthChanged: func(e monitor.HealthEvent) {
		h.mu.Lock()
		h.ev = append(h.ev, e)
		h.mu.Unlock()
	}}
}

func (h *healthEvents) all() []monitor.HealthEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]monitor.HealthEvent(nil), h.ev...)
}

func healthy(t *testing.T, mc *monitor.Machine) conditions.Condition {
	t.Helper()
	c := mc.Healthy()
	require.NotNil(t, c, "no Healthy condition: %+v", mc.Status)
	return *c
}

func withSystem(r bmc.HealthReport, h bmc.Health, faults ...string) bmc.HealthReport {
	r.System.Health, r.System.Rollup, r.System.Faults = h, h, faults
	return r
}

// The system's health comes with the power read (SystemStatus): a change
// is seen within one interval, is an event, sets Healthy False at Critical
// and clears it, and costs no request beyond the power read.
func TestHealthFromThePowerRead(t *testing.T) {
	var events healthEvents
	e := newFakeEnv(t, monitor.Config{Observer: events.observer()})
	e.add(t)

	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	require.NotNil(t, mc.Status.Health)
	assert.Equal(t, bmc.HealthOK, mc.Status.Health.System.Health)
	assert.Equal(t, bmc.HealthOK, mc.Status.Health.Worst())
	assert.Equal(t, monitortest.T0, mc.Status.Health.ReadTime)
	c := healthy(t, mc)
	assert.Equal(t, conditions.True, c.Status)
	assert.Equal(t, monitor.ReasonHealthOK, c.Reason)
	ev := events.all()
	require.Len(t, ev, 1, "the first read: unknown -> OK")
	assert.Equal(t, bmc.HealthUnknown, ev[0].From)
	assert.Equal(t, bmc.HealthOK, ev[0].To)

	// Past the first interval after the add (spread over [I, 2I)), then
	// a change is seen within one interval (+10%).
	monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m)
	e.srv.SetHealth(withSystem(fake.DefaultHealth(), bmc.HealthCritical, "PSU 2 input lost"))
	set := e.clk.Now()
	monitortest.Advance(t, e.clk, 66*time.Second, time.Second, e.m)
	mc = monitortest.Record(t, e.store, e.m, fakeURL)
	c = healthy(t, mc)
	assert.Equal(t, conditions.False, c.Status)
	assert.Equal(t, monitor.ReasonHealthCritical, c.Reason)
	assert.Contains(t, c.Message, "system 1 Critical (PSU 2 input lost)")
	// The transition is the first read after the change (a second one
	// may fit in 66s when the jitter draws short).
	var firstAfter time.Time
	for _, call := range e.srv.CallsTo(fake.MethodSystemStatus) {
		if call.Time.After(set) {
			firstAfter = call.Time
			break
		}
	}
	assert.Equal(t, firstAfter, c.LastTransitionTime.Time)
	assert.Equal(t, conditions.True, monitortest.Contactable(t, mc).Status)
	ev = events.all()
	require.Len(t, ev, 2)
	assert.Equal(t, bmc.HealthOK, ev[1].From)
	assert.Equal(t, bmc.HealthCritical, ev[1].To)
	assert.Equal(t, "10.0.0.1:443/redfish/v1/Systems/1", ev[1].System)
	assert.Equal(t, []string{"PSU 2 input lost"}, ev[1].Health.System.Faults)

	e.srv.SetHealth(fake.DefaultHealth())
	monitortest.Advance(t, e.clk, 66*time.Second, time.Second, e.m)
	mc = monitortest.Record(t, e.store, e.m, fakeURL)
	c = healthy(t, mc)
	assert.Equal(t, conditions.True, c.Status, "cleared")
	assert.Equal(t, monitor.ReasonHealthOK, c.Reason)
	assert.Len(t, events.all(), 3)
	assert.Equal(t, int64(3), e.m.Stats().HealthChanges)

	// Cost: one request per refresh, as before health was read.
	reads := e.m.Stats().Reads
	assert.Len(t, e.srv.CallsTo(fake.MethodSystemStatus), int(reads))
	assert.Empty(t, e.srv.CallsTo(fake.MethodPowerState))
	assert.Empty(t, e.srv.CallsTo(fake.MethodHealth), "no full report: the system carries its health")
}

// A system whose power read carries no health: the full report
// (chassis, managers) is read on the first refresh and every HealthEvery
// refreshes after, and its Critical chassis sets Healthy False.
func TestHealthReportWhenTheSystemHasNone(t *testing.T) {
	r := fake.DefaultHealth()
	r.System.Health, r.System.Rollup = bmc.HealthUnknown, bmc.HealthUnknown
	r.Chassis[0].Health, r.Chassis[0].Faults = bmc.HealthCritical, []string{"Fan 3 failed"}
	e := newFakeEnvWith(t, monitor.Config{HealthEvery: 3}, fake.Options{Power: bmc.PowerOn, Health: &r})
	e.add(t)
	assert.Len(t, e.srv.CallsTo(fake.MethodHealth), 1, "read on the first refresh")
	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	c := healthy(t, mc)
	assert.Equal(t, conditions.False, c.Status)
	assert.Contains(t, c.Message, "chassis 1 Critical (Fan 3 failed)")
	assert.Equal(t, monitortest.T0, mc.Status.Health.ReportTime)
	assert.Equal(t, int64(1), mc.Status.Health.ReportSeq)

	monitortest.Advance(t, e.clk, 10*time.Minute, time.Second, e.m)
	reads := e.m.Stats().Reads
	health := len(e.srv.CallsTo(fake.MethodHealth))
	assert.Equal(t, int((reads+2)/3), health, "every 3rd refresh (%d refreshes)", reads)
	mc = monitortest.Record(t, e.store, e.m, fakeURL)
	assert.Equal(t, int64(1+3*(health-1)), mc.Status.Health.ReportSeq)
}

// A BMC that reports no health: Contactable is True, no Healthy condition,
// the report is tried every HealthEvery refreshes.
func TestHealthUnsupported(t *testing.T) {
	e := newFakeEnvWith(t, monitor.Config{HealthEvery: 2}, fake.Options{Power: bmc.PowerOn, Unsupported: []bmc.Capability{bmc.CapabilityHealth}})
	e.add(t)
	monitortest.Advance(t, e.clk, 5*time.Minute, time.Second, e.m)
	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	assert.Equal(t, conditions.True, monitortest.Contactable(t, mc).Status)
	assert.Nil(t, mc.Healthy())
	assert.Equal(t, bmc.HealthUnknown, mc.Status.Health.Worst())
	reads := e.m.Stats().Reads
	assert.Equal(t, int((reads+1)/2), len(e.srv.CallsTo(fake.MethodHealth)))
	assert.Zero(t, e.m.Stats().HealthChanges)
}

// FullHealth reads chassis and managers also where the system carries its
// health; an observer that panics is recovered.
func TestFullHealthAndPanickingObserver(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{FullHealth: true, HealthEvery: 2, Observer: monitor.Observer{HealthChanged: func(monitor.HealthEvent) { panic("boom") }}})
	r := fake.DefaultHealth()
	r.Managers[0].Health = bmc.HealthWarning
	e.srv.SetHealth(r)
	e.add(t)
	assert.Len(t, e.srv.CallsTo(fake.MethodHealth), 1)
	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	c := healthy(t, mc)
	assert.Equal(t, conditions.True, c.Status)
	assert.Equal(t, monitor.ReasonHealthWarning, c.Reason)
	assert.Contains(t, c.Message, "manager BMC Warning")
	assert.Contains(t, e.logs.Text(), "monitor observer panicked")
}
