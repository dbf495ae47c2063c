package ipmi_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// openIPMISensors are testSensors (ipmi_sim cannot mark a reading
// unavailable, and ipmitool would bridge to the ME, which ipmi_sim lacks:
// those two are left out) and three more at thresholds.
func openIPMISensors() []ipmitest.Sensor {
	var list []ipmitest.Sensor
	for _, s := range testSensors() {
		if !s.Unavailable && s.Owner == 0 {
			list = append(list, s)
		}
	}
	r := ipmitest.Raw
	return append(list,
		ipmitest.Sensor{Number: 0x0c, Name: "CPU2 Temp", Type: 0x01, Unit: 1, Raw: 92, UNC: r(80), UCR: r(90)},
		ipmitest.Sensor{Number: 0x0d, Name: "DIMM Temp", Type: 0x01, Unit: 1, Raw: 82, UNC: r(80), UCR: r(90), UNR: r(100)},
		ipmitest.Sensor{Number: 0x0e, Name: "VBAT", Type: 0x02, Unit: 4, M: 2, RExp: -2, Raw: 140, LNC: r(135), LCR: r(130)},
	)
}

// ipmitoolSensor is one line of "ipmitool sensor": name | value | unit |
// status | thresholds...
type ipmitoolSensor struct{ name, value, unit, status string }

func ipmitoolSensors(t *testing.T, sim *ipmitest.OpenIPMI) []ipmitoolSensor {
	t.Helper()
	var out []ipmitoolSensor
	for _, line := range strings.Split(strings.TrimSpace(runIpmitool(t, sim, "sensor")), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 4 {
			t.Fatalf("ipmitool sensor: cannot parse %q", line)
		}
		out = append(out, ipmitoolSensor{strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), strings.TrimSpace(f[2]), strings.TrimSpace(f[3])})
	}
	return out
}

// ipmitoolHealth maps ipmitool's status column to a Health: ok, nc, cr,
// nr; "na" and a discrete sensor's state bits (0x0100) are unknown.
func ipmitoolHealth(status string) bmc.Health {
	switch status {
	case "ok":
		return bmc.HealthOK
	case "nc":
		return bmc.HealthWarning
	case "cr", "nr":
		return bmc.HealthCritical
	}
	return bmc.HealthUnknown
}

// ipmitoolUnits are ipmitool's names of the units bmckit writes in UCUM.
var ipmitoolUnits = map[string]string{"degrees C": bmc.UnitCelsius, "Volts": bmc.UnitVolts, "Amps": bmc.UnitAmps, "Watts": bmc.UnitWatts, "RPM": bmc.UnitRPM}

// TestSensorsMatchIpmitool: against OpenIPMI's ipmi_sim, the driver reads
// the sensors ipmitool lists ("sdr elist": names and order), with the
// readings, units and states "ipmitool sensor" prints, on the first read
// (records walked) and the next (records cached).
func TestSensorsMatchIpmitool(t *testing.T) {
	t.Parallel()
	list := openIPMISensors()
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{PoweredOn: true, Sensors: list})
	drv, err := dialer(t, sim.DialOptions()).Open(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(t.Context())

	var elist []string
	for _, line := range strings.Split(strings.TrimSpace(runIpmitool(t, sim, "sdr", "elist")), "\n") {
		elist = append(elist, strings.TrimSpace(strings.Split(line, "|")[0]))
	}
	tool := ipmitoolSensors(t, sim)
	if len(elist) != len(list) || len(tool) != len(list) {
		t.Fatalf("ipmitool lists %d sensors (sdr elist) and %d (sensor); ipmi_sim was given %d", len(elist), len(tool), len(list))
	}
	// ipmi_sim returns no whole record (CAh): the walk is one refused
	// read, a reservation and 16-byte pieces.
	pieces := 0
	for i, s := range list {
		pieces += (len(s.SDR(uint16(i+1))) + 15) / 16
	}
	n := int64(len(list))
	for pass, want := range []int64{2 + 2 + int64(pieces) + n, 2 + n} {
		before := drv.Stats().Requests
		h, err := drv.Health(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("read %d: %d requests for %d sensors", pass+1, drv.Stats().Requests-before, len(h.Sensors))
		if got := drv.Stats().Requests - before; got != want {
			t.Errorf("read %d: %d requests, want %d", pass+1, got, want)
		}
		if len(h.Sensors) != len(tool) {
			t.Fatalf("read %d: the driver reads %d sensors, ipmitool lists %d", pass+1, len(h.Sensors), len(tool))
		}
		for i, s := range h.Sensors {
			it := tool[i]
			if s.Name != elist[i] || s.Name != it.name {
				t.Errorf("sensor %d: the driver reads %q, ipmitool sdr elist %q, sensor %q", i, s.Name, elist[i], it.name)
			}
			if got, want := s.Health, ipmitoolHealth(it.status); got != want {
				t.Errorf("%s: health %q; ipmitool's status %q means %q", s.Name, got, it.status, want)
			}
			v, err := strconv.ParseFloat(it.value, 64)
			numeric := err == nil && it.unit != "discrete" && it.unit != ""
			switch {
			case numeric && s.Reading == nil:
				t.Errorf("%s: no reading; ipmitool reads %s %s", s.Name, it.value, it.unit)
			case numeric && math.Abs(*s.Reading-v) > 0.0005: // ipmitool prints 3 decimals
				t.Errorf("%s: reading %v; ipmitool reads %s", s.Name, *s.Reading, it.value)
			case !numeric && s.Reading != nil:
				t.Errorf("%s: reading %v; ipmitool prints no value (%q %q)", s.Name, *s.Reading, it.value, it.unit)
			}
			if u, ok := ipmitoolUnits[it.unit]; ok && s.Unit != u {
				t.Errorf("%s: unit %q; ipmitool's %q is %q", s.Name, s.Unit, it.unit, u)
			}
		}
	}
	if w := ipmi.SDRWalks(drv); w != 1 {
		t.Errorf("two reads walked the SDR repository %d times, want 1", w)
	}
}
