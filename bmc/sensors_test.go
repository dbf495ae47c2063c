package bmc_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func f64(v float64) *float64 { return &v }

// TestHealthReportBoundSensors: Bound cuts the list to MaxSensors, clips
// names and units, and drops values JSON cannot carry, so every bounded
// report encodes.
func TestHealthReportBoundSensors(t *testing.T) {
	r := bmc.HealthReport{}
	for i := 0; i < bmc.MaxSensors+5; i++ {
		r.Sensors = append(r.Sensors, bmc.SensorReading{Name: "s", Kind: bmc.SensorFan, Reading: f64(float64(i))})
	}
	r.Sensors[0] = bmc.SensorReading{
		Name: strings.Repeat("n", 1000), Unit: strings.Repeat("u", 1000), Kind: bmc.SensorOther,
		Reading:    f64(math.NaN()),
		Thresholds: &bmc.SensorThresholds{UpperCritical: f64(math.Inf(1)), LowerCritical: f64(-3)},
	}
	r.Sensors[1].Reading = f64(math.Inf(-1))
	r.Bound()
	if len(r.Sensors) != bmc.MaxSensors {
		t.Fatalf("after Bound: %d sensors, want %d", len(r.Sensors), bmc.MaxSensors)
	}
	s := r.Sensors[0]
	if len(s.Name) > bmc.MaxInventoryString || len(s.Unit) > bmc.MaxInventoryString {
		t.Errorf("after Bound: name %d bytes, unit %d bytes; want at most %d", len(s.Name), len(s.Unit), bmc.MaxInventoryString)
	}
	if s.Reading != nil || r.Sensors[1].Reading != nil {
		t.Errorf("after Bound: NaN and -Inf readings kept: %v, %v", s.Reading, r.Sensors[1].Reading)
	}
	if s.Thresholds.UpperCritical != nil || s.Thresholds.LowerCritical == nil || *s.Thresholds.LowerCritical != -3 {
		t.Errorf("after Bound: thresholds %+v; want +Inf dropped, -3 kept", *s.Thresholds)
	}
	if r.Sensors[2].Reading == nil || *r.Sensors[2].Reading != 2 {
		t.Errorf("after Bound: a finite reading changed: %v", r.Sensors[2].Reading)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("a bounded report does not encode: %v", err)
	}
}

// TestSensorReadingClone: a clone shares no pointer with the original.
func TestSensorReadingClone(t *testing.T) {
	orig := []bmc.SensorReading{{Name: "Fan1", Reading: f64(1200), Thresholds: &bmc.SensorThresholds{LowerCritical: f64(300)}}}
	cp := bmc.CloneSensors(orig)
	*cp[0].Reading, *cp[0].Thresholds.LowerCritical = 0, 0
	if *orig[0].Reading != 1200 || *orig[0].Thresholds.LowerCritical != 300 {
		t.Fatalf("changing the clone changed the original: %v, %v", *orig[0].Reading, *orig[0].Thresholds.LowerCritical)
	}
	if bmc.CloneSensors(nil) != nil {
		t.Fatal("CloneSensors(nil) is not nil")
	}
}

func TestSensorKindValid(t *testing.T) {
	for _, k := range []bmc.SensorKind{bmc.SensorTemperature, bmc.SensorFan, bmc.SensorVoltage, bmc.SensorCurrent, bmc.SensorPower, bmc.SensorOther} {
		if !k.Valid() {
			t.Errorf("%q is not Valid", k)
		}
	}
	for _, k := range []bmc.SensorKind{"", "Temperature", "humidity"} {
		if k.Valid() {
			t.Errorf("%q is Valid", k)
		}
	}
}
