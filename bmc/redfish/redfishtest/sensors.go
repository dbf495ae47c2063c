package redfishtest

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/bmckit/bmckit/bmc"
)

// The chassis' sensors (Config.Sensors), served as Redfish's Thermal and
// Power resources of Chassis/1: temperatures and fans in Thermal
// (Thermal.v1_7_0: Temperatures[].ReadingCelsius, Fans[].Reading with
// ReadingUnits), voltages and power consumption in Power (Power.v1_7_0:
// Voltages[].ReadingVolts, PowerControl[].PowerConsumedWatts), each with
// Status and the Lower/UpperThreshold{NonCritical,Critical} properties.
// The shapes follow DMTF's Thermal and Power schemas and the payloads in
// gofish's schemas/thermal_test.go and schemas/power_test.go (a
// Supermicro-style Thermal with an Absent sensor; DMTF's 1U mockup Power).
// Without sensors the chassis links neither resource, as before.

const (
	thermalURI = chassisURI + "/Thermal"
	powerURI   = chassisURI + "/Power"
)

// servedSensor says whether a reading's kind has a place in Thermal or
// Power (current and other sensors have none there).
func servedSensor(r bmc.SensorReading) bool {
	switch r.Kind {
	case bmc.SensorTemperature, bmc.SensorFan, bmc.SensorVoltage, bmc.SensorPower:
		return true
	}
	return false
}

// SetSensors replaces the chassis' sensors (see Config.Sensors).
func (s *Server) SetSensors(list []bmc.SensorReading) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sensors = bmc.CloneSensors(list)
}

// Sensors returns the sensors the BMC serves, in the order a client reads
// them: Thermal's temperatures and fans, then Power's voltages and power
// controls. Sensors of other kinds (current, other) are not served.
func (s *Server) Sensors() []bmc.SensorReading {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []bmc.SensorReading
	for _, k := range []bmc.SensorKind{bmc.SensorTemperature, bmc.SensorFan, bmc.SensorVoltage, bmc.SensorPower} {
		for _, r := range s.sensors {
			if r.Kind != k {
				continue
			}
			r = r.Clone()
			switch k { // the unit the resource's property names
			case bmc.SensorTemperature:
				r.Unit = bmc.UnitCelsius
			case bmc.SensorFan:
				if r.Unit != bmc.UnitPercent {
					r.Unit = bmc.UnitRPM
				}
			case bmc.SensorVoltage:
				r.Unit = bmc.UnitVolts
			case bmc.SensorPower:
				r.Unit, r.Thresholds = bmc.UnitWatts, nil // PowerControl has no thresholds
			}
			out = append(out, r)
		}
	}
	return out
}

// chassisSensorLinks adds the Thermal and Power links to the chassis
// document when there are sensors to serve. Callers hold s.mu.
func (s *Server) chassisSensorLinks(doc map[string]any) {
	if slices.ContainsFunc(s.sensors, servedSensor) {
		doc["Thermal"], doc["Power"] = link(thermalURI), link(powerURI)
	}
}

// sensorEntry is one member of Temperatures, Fans or Voltages.
func sensorEntry(uri, array string, i int, r bmc.SensorReading, reading string) map[string]any {
	status := map[string]any{"State": "Enabled"}
	if r.Health != bmc.HealthUnknown {
		status["Health"] = string(r.Health)
	}
	e := map[string]any{
		"@odata.id": uri + "#/" + array + "/" + strconv.Itoa(i), "MemberId": strconv.Itoa(i), "Name": r.Name,
		"Status": status, reading: r.Reading,
	}
	if t := r.Thresholds; t != nil {
		for k, v := range map[string]*float64{
			"LowerThresholdCritical": t.LowerCritical, "LowerThresholdNonCritical": t.LowerWarning,
			"UpperThresholdNonCritical": t.UpperWarning, "UpperThresholdCritical": t.UpperCritical,
		} {
			if v != nil {
				e[k] = *v
			}
		}
	}
	return e
}

func (s *Server) getThermal(w http.ResponseWriter, _ *http.Request) {
	temps, fans := []any{}, []any{}
	for _, r := range s.Sensors() {
		switch r.Kind {
		case bmc.SensorTemperature:
			temps = append(temps, sensorEntry(thermalURI, "Temperatures", len(temps), r, "ReadingCelsius"))
		case bmc.SensorFan:
			e := sensorEntry(thermalURI, "Fans", len(fans), r, "Reading")
			e["ReadingUnits"] = "RPM"
			if r.Unit == bmc.UnitPercent {
				e["ReadingUnits"] = "Percent"
			}
			fans = append(fans, e)
		}
	}
	if len(temps)+len(fans) == 0 {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no Thermal resource")
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": thermalURI, "@odata.type": "#Thermal.v1_7_0.Thermal", "Id": "Thermal", "Name": "Thermal",
		"Temperatures": temps, "Temperatures@odata.count": len(temps), "Fans": fans, "Fans@odata.count": len(fans),
	})
}

func (s *Server) getPower(w http.ResponseWriter, _ *http.Request) {
	volts, ctl := []any{}, []any{}
	for _, r := range s.Sensors() {
		switch r.Kind {
		case bmc.SensorVoltage:
			volts = append(volts, sensorEntry(powerURI, "Voltages", len(volts), r, "ReadingVolts"))
		case bmc.SensorPower:
			ctl = append(ctl, sensorEntry(powerURI, "PowerControl", len(ctl), r, "PowerConsumedWatts"))
		}
	}
	if len(volts)+len(ctl) == 0 {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no Power resource")
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": powerURI, "@odata.type": "#Power.v1_7_0.Power", "Id": "Power", "Name": "Power",
		"Voltages": volts, "Voltages@odata.count": len(volts), "PowerControl": ctl, "PowerControl@odata.count": len(ctl),
	})
}
