package monitor_test

import (
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

// The record carries the sensors of the full report with its ReportTime,
// refreshed with it every HealthEvery refreshes (FullHealth: the fake's
// power read carries the system's health, as IPMI's does); a Critical
// sensor does not change Healthy.
func TestHealthSensorsInTheRecord(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	r := fake.DefaultHealth()
	r.Sensors = []bmc.SensorReading{
		{Name: "CPU1 Temp", Kind: bmc.SensorTemperature, Reading: v(45), Unit: bmc.UnitCelsius, Health: bmc.HealthOK},
		{Name: "FAN2", Kind: bmc.SensorFan, Reading: v(0), Unit: bmc.UnitRPM, Health: bmc.HealthCritical},
	}
	e := newFakeEnvWith(t, monitor.Config{FullHealth: true, HealthEvery: 3}, fake.Options{Power: bmc.PowerOn, Health: &r})
	e.add(t)
	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	require.NotNil(t, mc.Status.Health)
	assert.Equal(t, r.Sensors, mc.Status.Health.Sensors, "the stored record (JSON) carries the sensors")
	assert.Equal(t, monitortest.T0, mc.Status.Health.ReportTime)
	c := healthy(t, mc)
	assert.Equal(t, conditions.True, c.Status, "a Critical sensor leaves Healthy as the BMC rates the system")
	assert.Equal(t, monitor.ReasonHealthOK, c.Reason)

	r.Sensors[0].Reading = v(71)
	e.srv.SetHealth(r)
	monitortest.Advance(t, e.clk, 10*time.Minute, time.Second, e.m)
	mc = monitortest.Record(t, e.store, e.m, fakeURL)
	calls := e.srv.CallsTo(fake.MethodHealth)
	require.Greater(t, len(calls), 1, "the full report read again")
	assert.Equal(t, r.Sensors, mc.Status.Health.Sensors)
	assert.Equal(t, calls[len(calls)-1].Time, mc.Status.Health.ReportTime, "the sensors are as of the last full report")
}
