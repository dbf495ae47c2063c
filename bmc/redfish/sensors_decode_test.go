package redfish

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func v(f float64) *float64 { return &f }

// TestDecodeRealSensors reads DMTF's mockup Thermal and Power
// (testdata/health/README.md): every entry in order, the Disabled CPU2
// without a reading or health, the thresholds as given (Fatal ones are
// not kept), PowerControl's consumption as the power reading.
func TestDecodeRealSensors(t *testing.T) {
	for _, c := range []struct {
		file string
		want []bmc.SensorReading
	}{
		{"dmtf-thermal-1U.json", []bmc.SensorReading{
			{Name: "CPU1 Temp", Kind: bmc.SensorTemperature, Reading: v(41), Unit: "Cel", Health: bmc.HealthOK, Thresholds: &bmc.SensorThresholds{UpperWarning: v(42), UpperCritical: v(45)}},
			{Name: "CPU2 Temp", Kind: bmc.SensorTemperature, Unit: "Cel", Thresholds: &bmc.SensorThresholds{UpperWarning: v(42), UpperCritical: v(45)}},
			{Name: "Chassis Intake Temp", Kind: bmc.SensorTemperature, Reading: v(25), Unit: "Cel", Health: bmc.HealthOK,
				Thresholds: &bmc.SensorThresholds{LowerCritical: v(5), LowerWarning: v(10), UpperWarning: v(30), UpperCritical: v(40)}},
			{Name: "BaseBoard System Fan", Kind: bmc.SensorFan, Reading: v(2100), Unit: "RPM", Health: bmc.HealthOK},
			{Name: "BaseBoard System Fan Backup", Kind: bmc.SensorFan, Reading: v(2050), Unit: "RPM", Health: bmc.HealthOK},
		}},
		{"dmtf-power-1U.json", []bmc.SensorReading{
			{Name: "VRM1 Voltage", Kind: bmc.SensorVoltage, Reading: v(12), Unit: "V", Health: bmc.HealthOK,
				Thresholds: &bmc.SensorThresholds{LowerCritical: v(11), LowerWarning: v(11.5), UpperWarning: v(12.5), UpperCritical: v(13)}},
			{Name: "VRM2 Voltage", Kind: bmc.SensorVoltage, Reading: v(5), Unit: "V", Health: bmc.HealthOK,
				Thresholds: &bmc.SensorThresholds{LowerCritical: v(4.5), LowerWarning: v(4.75), UpperWarning: v(5.5), UpperCritical: v(7)}},
			{Name: "System Input Power", Kind: bmc.SensorPower, Reading: v(344), Unit: "W", Health: bmc.HealthOK},
		}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "health", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeSensors(b)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.file, sensorsText(got), sensorsText(c.want))
		}
	}
}

// Shapes seen off the mockups: gofish's Supermicro-style Thermal
// (schemas/thermal_test.go) has an Absent sensor reading 0, left out;
// Thermal.v1_0 fans name themselves in FanName; a malformed entry is left
// out, the rest kept; a document that is not an object fails.
func TestDecodeSensorShapes(t *testing.T) {
	got, err := decodeSensors([]byte(`{"Temperatures":[
		{"Name":"Inlet Temp","Status":{"State":"Absent"},"ReadingCelsius":0},
		{"Name":"System Temp","Status":{"State":"Enabled","Health":"ok"},"ReadingCelsius":30,"UpperThresholdCritical":85},
		{"Name":7}],
		"Fans":[{"FanName":"FAN 1","Reading":35,"ReadingUnits":"Percent","Status":{"Health":"Critical"}}],
		"Voltages":{"not":"an array"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []bmc.SensorReading{
		{Name: "System Temp", Kind: bmc.SensorTemperature, Reading: v(30), Unit: "Cel", Health: bmc.HealthOK, Thresholds: &bmc.SensorThresholds{UpperCritical: v(85)}},
		{Name: "FAN 1", Kind: bmc.SensorFan, Reading: v(35), Unit: "%", Health: bmc.HealthCritical},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s\nwant %s", sensorsText(got), sensorsText(want))
	}
	for _, bad := range []string{`[]`, `"x"`, `{`} {
		if _, err := decodeSensors([]byte(bad)); err == nil {
			t.Errorf("decodeSensors(%s): no error", bad)
		}
	}
}

// FuzzDecodeSensors: Thermal and Power are outside input. No panic; every
// reading has a known kind, a finite value once bounded, a Health of
// bmc's constants.
func FuzzDecodeSensors(f *testing.F) {
	for _, n := range []string{"dmtf-thermal-1U.json", "dmtf-power-1U.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "health", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{"Fans":[{"Reading":1e400}]}`, `{"Temperatures":[{"ReadingCelsius":null,"Status":null}]}`, `{"Voltages":7}`, `null`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeSensors(b)
		if err != nil {
			return
		}
		r := bmc.HealthReport{Sensors: got}
		r.Bound()
		for _, s := range r.Sensors {
			if !s.Kind.Valid() {
				t.Fatalf("kind %q", s.Kind)
			}
			if s.Reading != nil && (math.IsNaN(*s.Reading) || math.IsInf(*s.Reading, 0)) {
				t.Fatalf("%q: reading %v after Bound", s.Name, *s.Reading)
			}
			switch s.Health {
			case bmc.HealthOK, bmc.HealthWarning, bmc.HealthCritical, bmc.HealthUnknown:
			default:
				t.Fatalf("%q: health %q", s.Name, s.Health)
			}
		}
	})
}

func sensorsText(l []bmc.SensorReading) string {
	s := ""
	for _, r := range l {
		s += "\n  " + r.Name + " " + string(r.Kind) + " " + r.Unit + " health=" + string(r.Health)
		if r.Reading != nil {
			s += " reading=" + ftoa(*r.Reading)
		}
		if t := r.Thresholds; t != nil {
			for _, p := range []*float64{t.LowerCritical, t.LowerWarning, t.UpperWarning, t.UpperCritical} {
				if p == nil {
					s += " -"
				} else {
					s += " " + ftoa(*p)
				}
			}
		}
	}
	return s
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
