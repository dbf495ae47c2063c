package redfish_test

import (
	"reflect"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

func f64(v float64) *float64 { return &v }

// simSensors are one sensor of each kind Thermal and Power carry, a
// stopped fan in percent, one without a reading or health, and a current
// sensor, which neither resource has a place for.
func simSensors() []bmc.SensorReading {
	return []bmc.SensorReading{
		{Name: "CPU1 Temp", Kind: bmc.SensorTemperature, Reading: f64(41), Unit: bmc.UnitCelsius, Health: bmc.HealthOK,
			Thresholds: &bmc.SensorThresholds{UpperWarning: f64(42), UpperCritical: f64(45)}},
		{Name: "CPU2 Temp", Kind: bmc.SensorTemperature, Unit: bmc.UnitCelsius},
		{Name: "FAN1", Kind: bmc.SensorFan, Reading: f64(2100), Unit: bmc.UnitRPM, Health: bmc.HealthOK, Thresholds: &bmc.SensorThresholds{LowerCritical: f64(300)}},
		{Name: "FAN2", Kind: bmc.SensorFan, Reading: f64(0), Unit: bmc.UnitPercent, Health: bmc.HealthCritical},
		{Name: "VRM1 Voltage", Kind: bmc.SensorVoltage, Reading: f64(12.05), Unit: bmc.UnitVolts, Health: bmc.HealthWarning,
			Thresholds: &bmc.SensorThresholds{LowerCritical: f64(11), LowerWarning: f64(11.5), UpperWarning: f64(12), UpperCritical: f64(13)}},
		{Name: "System Input Power", Kind: bmc.SensorPower, Reading: f64(344), Unit: bmc.UnitWatts, Health: bmc.HealthOK},
		{Name: "PSU1 Current", Kind: bmc.SensorCurrent, Reading: f64(1.5), Unit: bmc.UnitAmps},
	}
}

// Health reads the chassis' Thermal and Power (one GET each, over real
// HTTP) as the simulator serves them, and a change at once; without
// sensors the chassis links neither and Health costs what it did.
func TestHealthSensorsFromThermalAndPower(t *testing.T) {
	// Without sensors: the chassis links neither resource, and Health
	// costs what it did.
	srv0, drv0 := dialSim(t, redfishtest.Config{}, testOptions(), "1", false)
	srv0.ClearRequests()
	h, err := drv0.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	base := len(srv0.Requests())
	if h.Sensors != nil {
		t.Errorf("without sensors: %d sensors read", len(h.Sensors))
	}

	srv, drv := dialSim(t, redfishtest.Config{Sensors: simSensors()}, testOptions(), "1", false)
	srv.ClearRequests()
	h, err = drv.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := srv.Sensors()
	if len(want) != 6 {
		t.Fatalf("the simulator serves %d sensors, want 6 (the current sensor has no place)", len(want))
	}
	if !reflect.DeepEqual(h.Sensors, want) {
		t.Fatalf("Sensors = %+v\nthe simulator serves %+v", h.Sensors, want)
	}
	gets := map[string]int{}
	for _, r := range srv.Requests() {
		gets[r.Method+" "+r.Path]++
	}
	if gets["GET /redfish/v1/Chassis/1/Thermal"] != 1 || gets["GET /redfish/v1/Chassis/1/Power"] != 1 || len(srv.Requests()) != base+2 {
		t.Errorf("Health sent %v; want %d requests: those without sensors (%d), Thermal and Power once each", gets, base+2, base)
	}

	list := simSensors()
	list[0].Reading, list[0].Health = f64(46), bmc.HealthCritical
	srv.SetSensors(list)
	h, err = drv.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Sensors[0]; got.Health != bmc.HealthCritical || got.Reading == nil || *got.Reading != 46 {
		t.Errorf("after the change, CPU1 Temp reads %+v", got)
	}
}
