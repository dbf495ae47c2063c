package bmc

import "math"

// SensorKind says what a sensor measures.
type SensorKind string

// Sensor kinds.
const (
	SensorTemperature SensorKind = "temperature"
	SensorFan         SensorKind = "fan"
	SensorVoltage     SensorKind = "voltage"
	SensorCurrent     SensorKind = "current"
	SensorPower       SensorKind = "power"
	// SensorOther: anything else (humidity, a presence or state sensor).
	SensorOther SensorKind = "other"
)

// Valid reports whether k is one of the kinds above.
func (k SensorKind) Valid() bool {
	switch k {
	case SensorTemperature, SensorFan, SensorVoltage, SensorCurrent, SensorPower, SensorOther:
		return true
	}
	return false
}

// Units of [SensorReading.Unit] for the common kinds, in UCUM as Redfish's
// Sensor.ReadingUnits writes them. Other units keep the BMC's own name.
const (
	UnitCelsius = "Cel"
	UnitRPM     = "RPM"
	UnitVolts   = "V"
	UnitAmps    = "A"
	UnitWatts   = "W"
	UnitPercent = "%"
)

// MaxSensors bounds HealthReport.Sensors.
const MaxSensors = 128

// SensorReading is one sensor as the BMC reports it, at the report's
// ReadTime.
type SensorReading struct {
	// Name is the sensor's name on the BMC (IPMI: the SDR's ID string,
	// e.g. "CPU1 Temp"; Redfish: the sensor's Name).
	Name string     `json:"name"`
	Kind SensorKind `json:"kind"`
	// Reading is the value in Unit; nil when the BMC gives no numeric
	// reading now (unavailable, scanning disabled, not present, a
	// discrete sensor). 0 is a reading: a stopped fan reads 0 RPM.
	Reading *float64 `json:"reading,omitempty"`
	// Unit is the reading's unit: UnitCelsius, UnitRPM, UnitVolts,
	// UnitAmps, UnitWatts, UnitPercent, else the BMC's name of it.
	Unit string `json:"unit,omitempty"`
	// Health is the BMC's own rating of the reading against its
	// thresholds: Warning beyond a non-critical threshold, Critical
	// beyond a critical or non-recoverable one, OK within them.
	// HealthUnknown when the BMC rates nothing (no reading, a discrete
	// sensor).
	Health Health `json:"health,omitempty"`
	// Thresholds are the BMC's thresholds in Unit, where the driver reads
	// them (nil otherwise; the IPMI driver does not: one more request per
	// sensor).
	Thresholds *SensorThresholds `json:"thresholds,omitempty"`
}

// SensorThresholds are a sensor's thresholds in its unit; each is nil
// where the BMC sets none. Warning is IPMI's "non-critical", Redfish's
// LowerCaution/UpperCaution.
type SensorThresholds struct {
	LowerCritical *float64 `json:"lowerCritical,omitempty"`
	LowerWarning  *float64 `json:"lowerWarning,omitempty"`
	UpperWarning  *float64 `json:"upperWarning,omitempty"`
	UpperCritical *float64 `json:"upperCritical,omitempty"`
}

// Clone returns a deep copy of r (its pointers are copied).
func (r SensorReading) Clone() SensorReading {
	r.Reading = clonePtr(r.Reading)
	if r.Thresholds != nil {
		t := *r.Thresholds
		t.LowerCritical, t.LowerWarning = clonePtr(t.LowerCritical), clonePtr(t.LowerWarning)
		t.UpperWarning, t.UpperCritical = clonePtr(t.UpperWarning), clonePtr(t.UpperCritical)
		r.Thresholds = &t
	}
	return r
}

// CloneSensors deep-copies a list of readings (nil stays nil).
func CloneSensors(l []SensorReading) []SensorReading {
	if l == nil {
		return nil
	}
	out := make([]SensorReading, len(l))
	for i, r := range l {
		out[i] = r.Clone()
	}
	return out
}

func clonePtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// bound clips the strings and drops values JSON cannot carry (NaN, ±Inf).
func (r *SensorReading) bound() {
	r.Name = clipText(r.Name, MaxInventoryString)
	r.Unit = clipText(r.Unit, MaxInventoryString)
	r.Reading = finite(r.Reading)
	if t := r.Thresholds; t != nil {
		t.LowerCritical, t.LowerWarning = finite(t.LowerCritical), finite(t.LowerWarning)
		t.UpperWarning, t.UpperCritical = finite(t.UpperWarning), finite(t.UpperCritical)
	}
}

func finite(p *float64) *float64 {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	return p
}
