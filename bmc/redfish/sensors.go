package redfish

// Sensor readings for Health (docs/health-events.md, "Sensor readings"):
// the Thermal and Power resources each chassis links, one GET each. They
// carry every temperature, fan, voltage and power reading inline with its
// Status.Health and thresholds; the newer Sensors collection costs one GET
// per sensor where the BMC does not $expand it, so it is not read.
//
// The entries are decoded here rather than with gofish's schemas.Thermal
// and schemas.Power: those fail a whole document on one malformed entry
// (a MemberId that is a number, as in gofish's own invalidPowerBody), and
// the driver keeps the entries that decode.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bmckit/bmckit/bmc"
)

// sensorLinks are a chassis' links to its Thermal and Power resources.
type sensorLinks struct {
	Thermal *odataLink `json:"Thermal"`
	Power   *odataLink `json:"Power"`
}

type odataLink struct {
	ID string `json:"@odata.id"`
}

// sensorEntry is one member of Temperatures, Fans, Voltages or
// PowerControl: its reading is under the property the array names.
type sensorEntry struct {
	Name    string
	FanName string // Thermal.v1_0 fans
	Status  *struct {
		State  string
		Health string
	}
	ReadingCelsius, Reading, ReadingVolts, PowerConsumedWatts *float64
	ReadingUnits                                              string
	LowerThresholdCritical, LowerThresholdNonCritical         *float64
	UpperThresholdNonCritical, UpperThresholdCritical         *float64
}

// decodeSensors decodes a Thermal or a Power document: the entries of
// Temperatures and Fans, or of Voltages and PowerControl, in that order.
// Entries that do not decode, and those whose State is Absent (an empty
// socket or bay), are left out. A document that is not an object is an
// error.
func decodeSensors(body []byte) ([]bmc.SensorReading, error) {
	var doc struct {
		Temperatures, Fans, Voltages, PowerControl []json.RawMessage
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		// A property that is not an array: decode what is.
		var loose map[string]json.RawMessage
		if err2 := json.Unmarshal(body, &loose); err2 != nil {
			return nil, fmt.Errorf("decode sensors: %w", err)
		}
		for k, dst := range map[string]*[]json.RawMessage{"Temperatures": &doc.Temperatures, "Fans": &doc.Fans, "Voltages": &doc.Voltages, "PowerControl": &doc.PowerControl} {
			_ = json.Unmarshal(loose[k], dst)
		}
	}
	var out []bmc.SensorReading
	for _, part := range []struct {
		entries []json.RawMessage
		kind    bmc.SensorKind
		unit    string
		reading func(e *sensorEntry) *float64
	}{
		{doc.Temperatures, bmc.SensorTemperature, bmc.UnitCelsius, func(e *sensorEntry) *float64 { return e.ReadingCelsius }},
		{doc.Fans, bmc.SensorFan, bmc.UnitRPM, func(e *sensorEntry) *float64 { return e.Reading }},
		{doc.Voltages, bmc.SensorVoltage, bmc.UnitVolts, func(e *sensorEntry) *float64 { return e.ReadingVolts }},
		{doc.PowerControl, bmc.SensorPower, bmc.UnitWatts, func(e *sensorEntry) *float64 { return e.PowerConsumedWatts }},
	} {
		for _, raw := range part.entries {
			var e sensorEntry
			if json.Unmarshal(raw, &e) != nil {
				continue
			}
			if e.Status != nil && strings.EqualFold(e.Status.State, "Absent") {
				continue
			}
			r := bmc.SensorReading{Name: strings.TrimSpace(e.Name), Kind: part.kind, Unit: part.unit, Reading: part.reading(&e)}
			if r.Name == "" {
				r.Name = strings.TrimSpace(e.FanName)
			}
			if part.kind == bmc.SensorFan && strings.EqualFold(e.ReadingUnits, "Percent") {
				r.Unit = bmc.UnitPercent
			}
			if e.Status != nil {
				r.Health = bmc.ParseHealth(e.Status.Health)
			}
			if part.kind != bmc.SensorPower && (e.LowerThresholdCritical != nil || e.LowerThresholdNonCritical != nil ||
				e.UpperThresholdNonCritical != nil || e.UpperThresholdCritical != nil) {
				r.Thresholds = &bmc.SensorThresholds{
					LowerCritical: e.LowerThresholdCritical, LowerWarning: e.LowerThresholdNonCritical,
					UpperWarning: e.UpperThresholdNonCritical, UpperCritical: e.UpperThresholdCritical,
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// chassisSensors reads the Thermal and Power resources links names. A
// resource the BMC answers 404 for (linked, not served) has no sensors.
func (d *Driver) chassisSensors(ctx context.Context, links sensorLinks) ([]bmc.SensorReading, error) {
	var out []bmc.SensorReading
	for _, l := range []*odataLink{links.Thermal, links.Power} {
		if l == nil || l.ID == "" {
			continue
		}
		var raw json.RawMessage
		if _, err := d.getJSON(ctx, l.ID, &raw); err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read the sensors of %s: %w", l.ID, err)
		}
		rs, err := decodeSensors(raw)
		if err != nil {
			return nil, bmc.Permanent(fmt.Errorf("GET %s: %w", l.ID, err))
		}
		out = append(out, rs...)
	}
	return out, nil
}
