package ipmi_test

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// testSensors cover every path of the decoder: plain and scaled analog
// sensors, a Dell-style power sensor of type current in Watts, a stopped
// fan (reading 0), a sensor whose reading is unavailable, a discrete
// presence sensor, a compact threshold record, a sensor the BMC says is
// not present and one owned by another controller (an Intel ME).
func testSensors() []ipmitest.Sensor {
	r := ipmitest.Raw
	return []ipmitest.Sensor{
		{Number: 0x01, Name: "CPU1 Temp", Type: 0x01, Unit: 1, Raw: 45, LNC: r(5), LCR: r(2), UNC: r(80), UCR: r(90), UNR: r(100)},
		{Number: 0x02, Name: "12V", Type: 0x02, Unit: 4, M: 6, RExp: -2, Raw: 200, LCR: r(180), UCR: r(220)}, // 12.00 V
		{Number: 0x03, Name: "FAN1", Type: 0x04, Unit: 18, M: 60, Raw: 80, LCR: r(10), LNC: r(15)},           // 4800 RPM
		{Number: 0x04, Name: "FAN2", Type: 0x04, Unit: 18, M: 60, Raw: 0, LCR: r(10)},                        // stopped
		{Number: 0x05, Name: "Pwr Consumption", Type: 0x03, Unit: 6, M: 2, B: 10, Raw: 100, UCR: r(250)},     // 210 W
		{Number: 0x06, Name: "Inlet Temp", Type: 0x01, Unit: 1, Raw: 20, Unavailable: true, UCR: r(50)},
		{Number: 0x07, Name: "PS1 Status", Type: 0x08, Discrete: true, Raw: 0x01},
		{Number: 0x08, Name: "Exhaust Temp", Type: 0x01, Unit: 1, Raw: 70, UNC: r(60), UCR: r(75), Compact: true},
		{Number: 0x09, Name: "PCH Temp", Type: 0x01, Unit: 1, Raw: 50, NotPresent: true},
		{Number: 0x0a, Name: "ME Temp", Type: 0x01, Unit: 1, Raw: 40, Owner: 0x2c, UCR: r(90)},
	}
}

// TestSensorsMatchSimulator: Health reads every sensor the simulator
// lists with the value, unit, kind and health it holds, whole records or
// in pieces; a reading that crosses a threshold reads as the BMC rates it.
func TestSensorsMatchSimulator(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{0, 16} {
		sim := ipmitest.NewServer(t, ipmitest.Options{PoweredOn: true, Sensors: testSensors(), SDRReadLimit: limit})
		drv, err := dialer(t, ipmi.Options{RequestsPerSecond: -1}).Open(t.Context(), sim.Endpoint, sim.Credentials)
		if err != nil {
			t.Fatal(err)
		}
		defer drv.Close(t.Context())
		check := func(what string) {
			t.Helper()
			h, err := drv.Health(t.Context())
			if err != nil {
				t.Fatalf("SDRReadLimit %d, %s: Health: %v", limit, what, err)
			}
			if want := sim.Sensors().Readings(); !reflect.DeepEqual(h.Sensors, want) {
				t.Errorf("SDRReadLimit %d, %s: Sensors =\n%s\nthe simulator holds\n%s", limit, what, show(h.Sensors), show(want))
			}
		}
		check("as started")
		h, _ := drv.Health(t.Context())
		// Spot checks, so that a mistake shared by the simulator's
		// Readings and the driver still shows.
		want := map[string]struct {
			v    float64
			kind bmc.SensorKind
			unit string
			h    bmc.Health
		}{
			"CPU1 Temp":       {45, bmc.SensorTemperature, "Cel", bmc.HealthOK},
			"12V":             {12, bmc.SensorVoltage, "V", bmc.HealthOK},
			"FAN1":            {4800, bmc.SensorFan, "RPM", bmc.HealthOK},
			"FAN2":            {0, bmc.SensorFan, "RPM", bmc.HealthCritical},
			"Pwr Consumption": {210, bmc.SensorPower, "W", bmc.HealthOK},
		}
		for _, s := range h.Sensors {
			w, ok := want[s.Name]
			if !ok {
				continue
			}
			if s.Reading == nil || *s.Reading != w.v || s.Kind != w.kind || s.Unit != w.unit || s.Health != w.h {
				t.Errorf("SDRReadLimit %d: %s = %s; want %v %s, kind %s, health %q", limit, s.Name, show([]bmc.SensorReading{s}), w.v, w.unit, w.kind, w.h)
			}
			delete(want, s.Name)
		}
		if len(want) > 0 {
			t.Errorf("SDRReadLimit %d: not read: %v", limit, want)
		}
		for _, step := range []struct {
			raw  uint8
			want bmc.Health
		}{{85, bmc.HealthWarning}, {95, bmc.HealthCritical}, {101, bmc.HealthCritical}, {4, bmc.HealthWarning}, {1, bmc.HealthCritical}, {45, bmc.HealthOK}} {
			sim.Sensors().SetRaw(0x01, step.raw)
			h, err := drv.Health(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Sensors[0]; got.Health != step.want || got.Reading == nil || *got.Reading != float64(step.raw) {
				t.Errorf("SDRReadLimit %d: CPU1 Temp at %d reads %s; want health %q", limit, step.raw, show([]bmc.SensorReading{got}), step.want)
			}
		}
		// Nothing else changed: the rest still as held.
		check("after the readings changed")
	}
}

// TestSensorsRequests: the SDR repository is read once per driver and
// again only when it changes; a read costs Get Chassis Status, Get SDR
// Repository Info and one Get Sensor Reading per sensor.
func TestSensorsRequests(t *testing.T) {
	t.Parallel()
	sensors := testSensors()
	sim := ipmitest.NewServer(t, ipmitest.Options{Sensors: sensors})
	drv, err := dialer(t, ipmi.Options{RequestsPerSecond: -1}).Open(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(t.Context())
	n := int64(len(sensors))
	read := n - 1 // the ME's sensor is not asked for
	count := func(what string, want int64) {
		t.Helper()
		before, sdr := drv.Stats().Requests, sim.Sensors().SDRReads()
		h, err := drv.Health(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := drv.Stats().Requests - before; got != want {
			t.Errorf("%s: Health sent %d requests (%d Get SDR), want %d", what, got, sim.Sensors().SDRReads()-sdr, want)
		}
		if len(h.Sensors) != len(sim.Sensors().List()) {
			t.Errorf("%s: %d sensors read, the simulator has %d", what, len(h.Sensors), len(sim.Sensors().List()))
		}
	}
	count("first read: chassis, repository info, a Get SDR per record and a reading per sensor the BMC owns", 2+n+read)
	count("second read: the cached records", 2+read)
	count("third read", 2+read)
	if w := ipmi.SDRWalks(drv); w != 1 {
		t.Errorf("after three reads the repository was walked %d times, want 1", w)
	}
	sensors = sensors[:3]
	sim.Sensors().Set(sensors)
	count("after the repository changed: read again", 2+2*3)
	count("then cached", 2+3)
	if w := ipmi.SDRWalks(drv); w != 2 {
		t.Errorf("the repository was walked %d times, want 2", w)
	}
}

// TestSensorsInPieces: a BMC that cannot return a whole record is read 16
// bytes at a time under a reservation, ipmitool's way: one refused
// whole-record read, a reservation, then pieces.
func TestSensorsInPieces(t *testing.T) {
	t.Parallel()
	one := testSensors()[:1] // a 57-byte full record: 4 pieces of at most 16
	sim := ipmitest.NewServer(t, ipmitest.Options{Sensors: one, SDRReadLimit: 16})
	drv, err := dialer(t, ipmi.Options{RequestsPerSecond: -1}).Open(t.Context(), sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(t.Context())
	before := drv.Stats().Requests
	h, err := drv.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// chassis, repo info, refused whole read, reserve, 4 pieces, reading
	if got := drv.Stats().Requests - before; got != 9 {
		t.Errorf("Health sent %d requests (%d Get SDR), want 9", got, sim.Sensors().SDRReads())
	}
	if !reflect.DeepEqual(h.Sensors, sim.Sensors().Readings()) {
		t.Errorf("Sensors = %s, want %s", show(h.Sensors), show(sim.Sensors().Readings()))
	}
}

func show(l []bmc.SensorReading) string {
	s := ""
	for _, r := range l {
		v := "none"
		if r.Reading != nil {
			v = formatFloat(*r.Reading)
		}
		s += "  " + r.Name + ": " + v + " " + r.Unit + " " + string(r.Kind) + " health=" + string(r.Health) + "\n"
	}
	return s
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
