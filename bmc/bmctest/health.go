package bmctest

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// HealthPeer lets the Health/... subtests compare what the driver reads
// with what the peer holds, and change it.
type HealthPeer struct {
	// Want returns the health the peer holds now (ReadTime is ignored).
	// Required.
	Want func() bmc.HealthReport
	// Set, when set, makes the peer rate every resource (system, chassis,
	// manager) h, its own health and its rollup. Defaults to nil:
	// Health/Changes skips.
	Set func(h bmc.Health)
	// SetSensor, when set, makes the peer's sensor of that name read a
	// value the peer rates h (Critical, Warning, OK). Health/Sensors calls
	// it for the first sensor of Want whose health is known. Defaults to
	// nil: Health/Sensors only compares.
	SetSensor func(name string, h bmc.Health)
}

// health checks bmc.HealthReader and bmc.SystemStatusReader:
//
//   - Read: a well-formed report with a read time; equal to what the peer
//     holds where Target.Health says;
//   - Changes: a change of the peer's health is read at once (no cache);
//   - SystemStatus: the power state PowerState reads, with the system's
//     health Health reads (or unknown, where the peer lacks health);
//   - Sensors: well-formed sensors (healthSensors), where the peer holds
//     some.
func (s *suite) health(t *testing.T, path string) {
	s.run(t, path, "Sensors", func(tc *tcase) { tc.healthSensors() })
	s.run(t, path, "Read", func(tc *tcase) {
		r := tc.healthReader()
		h, err := r.Health(tc.ctx())
		if err != nil {
			tc.requireOpError("Health", err)
			tc.Fatalf("Health: %v", err)
		}
		tc.checkHealth(h)
		if p := tc.target.Health; p != nil {
			tc.wantHealth(h, p.Want())
		}
	})
	s.run(t, path, "Changes", func(tc *tcase) {
		r := tc.healthReader()
		p := tc.target.Health
		if p == nil || p.Set == nil {
			tc.Skip("Target.Health.Set is not set: the suite cannot change the peer's health")
		}
		for _, want := range []bmc.Health{bmc.HealthCritical, bmc.HealthWarning, bmc.HealthOK} {
			p.Set(want)
			h, err := r.Health(tc.ctx())
			tc.noErr("Health after the peer's health changed to "+string(want), err)
			if h.System.Health != want || h.System.Rollup != want {
				tc.Errorf("after the peer rated the system %s, Health reads %q (rollup %q)", want, h.System.Health, h.System.Rollup)
			}
			tc.wantHealth(h, p.Want())
		}
	})
	s.run(t, path, "SystemStatus", func(tc *tcase) {
		r, ok := tc.drv.(bmc.SystemStatusReader)
		if !ok {
			tc.Skipf("%T does not implement bmc.SystemStatusReader", tc.drv)
		}
		tc.ensurePower(bmc.PowerOn)
		st, err := r.SystemStatus(tc.ctx())
		if err != nil {
			tc.requireOpError("SystemStatus", err)
			tc.Fatalf("SystemStatus: %v", err)
		}
		if st.Power != bmc.PowerOn {
			tc.Errorf("SystemStatus reads power %q; PowerState read On", st.Power)
		}
		if st.ReadTime.IsZero() {
			tc.Errorf("SystemStatus has no ReadTime")
		}
		tc.validHealth("SystemStatus.Health", st.Health)
		if tc.opts.lacks(bmc.CapabilityHealth) {
			if st.Health.Health != bmc.HealthUnknown || st.Health.Rollup != bmc.HealthUnknown {
				tc.Errorf("SystemStatus reads health %q/%q from a peer that lacks health (Options.Unsupported)", st.Health.Health, st.Health.Rollup)
			}
			return
		}
		if p := tc.target.Health; p != nil {
			want := p.Want().System
			if st.Health.Health != want.Health || st.Health.Rollup != want.Rollup {
				tc.Errorf("SystemStatus reads the system's health %q/%q; the peer holds %q/%q", st.Health.Health, st.Health.Rollup, want.Health, want.Rollup)
			}
		}
		if hr, ok := tc.drv.(bmc.HealthReader); ok {
			h, err := hr.Health(tc.ctx())
			tc.noErr("Health", err)
			if st.Health.Health != h.System.Health || st.Health.Rollup != h.System.Rollup {
				tc.Errorf("SystemStatus reads the system's health %q/%q, Health %q/%q", st.Health.Health, st.Health.Rollup, h.System.Health, h.System.Rollup)
			}
		}
	})
}

func (tc *tcase) healthReader() bmc.HealthReader {
	tc.Helper()
	r, ok := tc.drv.(bmc.HealthReader)
	if !ok {
		tc.Skipf("%T does not implement bmc.HealthReader", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityHealth) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityHealth, bmc.CapabilityHealth)
	}
	return r
}

// checkHealth checks a report's shape: a read time, known health values,
// bounds.
func (tc *tcase) checkHealth(h bmc.HealthReport) {
	tc.Helper()
	if h.ReadTime.IsZero() {
		tc.Errorf("Health has no ReadTime")
	}
	tc.validHealth("Health.System", h.System)
	if len(h.Chassis) > bmc.MaxInventoryEntries || len(h.Managers) > bmc.MaxInventoryEntries {
		tc.Errorf("Health lists %d chassis and %d managers, over bmc.MaxInventoryEntries: call HealthReport.Bound", len(h.Chassis), len(h.Managers))
	}
	for _, c := range h.Chassis {
		tc.validHealth("Health.Chassis", c)
	}
	for _, m := range h.Managers {
		tc.validHealth("Health.Managers", m)
	}
	if len(h.Sensors) > bmc.MaxSensors {
		tc.Errorf("Health lists %d sensors, over bmc.MaxSensors: call HealthReport.Bound", len(h.Sensors))
	}
	for _, r := range h.Sensors {
		tc.validSensor(r)
	}
}

func (tc *tcase) validHealth(what string, h bmc.ResourceHealth) {
	tc.Helper()
	for _, v := range []bmc.Health{h.Health, h.Rollup} {
		switch v {
		case bmc.HealthOK, bmc.HealthWarning, bmc.HealthCritical, bmc.HealthUnknown:
		default:
			tc.Errorf("%s %s: health %q is not one of bmc's Health constants (map it with bmc.ParseHealth)", what, h.ID, v)
		}
	}
	if len(h.Faults) > bmc.MaxHealthFaults {
		tc.Errorf("%s %s: %d faults, over bmc.MaxHealthFaults", what, h.ID, len(h.Faults))
	}
}

// wantHealth compares a report with the peer's, ReadTime aside.
func (tc *tcase) wantHealth(got, want bmc.HealthReport) {
	tc.Helper()
	got.ReadTime, want.ReadTime = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		tc.Errorf("Health = %+v\nthe peer holds (Target.Health) %+v", got, want)
	}
}

func (tc *tcase) checkHealthUnsupported() {
	tc.Helper()
	r, ok := tc.drv.(bmc.HealthReader)
	if !ok {
		tc.Skipf("%T does not implement bmc.HealthReader", tc.drv)
	}
	_, err := r.Health(tc.ctx())
	tc.requireNotSupported("Health", err)
}

// validSensor checks one reading's shape: a name, a known kind and health,
// finite values.
func (tc *tcase) validSensor(r bmc.SensorReading) {
	tc.Helper()
	if r.Name == "" {
		tc.Errorf("Health.Sensors: a sensor without a name: %s", sensorText(r))
	}
	if !r.Kind.Valid() {
		tc.Errorf("Health.Sensors %q: kind %q is not one of bmc's SensorKind constants", r.Name, r.Kind)
	}
	switch r.Health {
	case bmc.HealthOK, bmc.HealthWarning, bmc.HealthCritical, bmc.HealthUnknown:
	default:
		tc.Errorf("Health.Sensors %q: health %q is not one of bmc's Health constants", r.Name, r.Health)
	}
	vals := []*float64{r.Reading}
	if t := r.Thresholds; t != nil {
		vals = append(vals, t.LowerCritical, t.LowerWarning, t.UpperWarning, t.UpperCritical)
	}
	for _, v := range vals {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
			tc.Errorf("Health.Sensors %q: value %v cannot be stored as JSON: call HealthReport.Bound", r.Name, *v)
		}
	}
}

// healthSensors: where the peer holds sensors (Target.Health.Want), Health
// reads every one, in the peer's order, as the peer holds it; with
// HealthPeer.SetSensor, a sensor driven to Critical, Warning and back to
// OK reads so at once.
func (tc *tcase) healthSensors() {
	tc.Helper()
	r := tc.healthReader()
	p := tc.target.Health
	if p == nil {
		tc.Skip("Target.Health is not set: the suite cannot know the peer's sensors")
	}
	want := p.Want().Sensors
	if len(want) == 0 {
		tc.Skip("the peer holds no sensors (Target.Health.Want)")
	}
	read := func(what string) []bmc.SensorReading {
		tc.Helper()
		h, err := r.Health(tc.ctx())
		tc.noErr("Health"+what, err)
		for _, s := range h.Sensors {
			tc.validSensor(s)
		}
		return h.Sensors
	}
	compare := func(what string, got, want []bmc.SensorReading) {
		tc.Helper()
		if len(got) != len(want) {
			tc.Errorf("Health%s reads %d sensors; the peer holds %d", what, len(got), len(want))
			return
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				tc.Errorf("Health%s: sensor %d reads %s; the peer holds %s", what, i, sensorText(got[i]), sensorText(want[i]))
			}
		}
	}
	compare("", read(""), want)
	if p.SetSensor == nil {
		return
	}
	name := ""
	for _, s := range want {
		if s.Health != bmc.HealthUnknown {
			name = s.Name
			break
		}
	}
	if name == "" {
		tc.Skip("no sensor of the peer has a known health to change")
	}
	for _, h := range []bmc.Health{bmc.HealthCritical, bmc.HealthWarning, bmc.HealthOK} {
		p.SetSensor(name, h)
		what := " after the peer rated sensor " + strconv.Quote(name) + " " + string(h)
		got := read(what)
		for _, s := range got {
			if s.Name == name && s.Health != h {
				tc.Errorf("Health%s reads %s", what, sensorText(s))
			}
		}
		compare(what, got, p.Want().Sensors)
	}
}

func sensorText(r bmc.SensorReading) string {
	v := "no reading"
	if r.Reading != nil {
		v = strconv.FormatFloat(*r.Reading, 'g', -1, 64) + " " + r.Unit
	}
	th := ""
	if t := r.Thresholds; t != nil {
		f := func(p *float64) string {
			if p == nil {
				return "-"
			}
			return strconv.FormatFloat(*p, 'g', -1, 64)
		}
		th = fmt.Sprintf(", thresholds critical %s..%s, warning %s..%s", f(t.LowerCritical), f(t.UpperCritical), f(t.LowerWarning), f(t.UpperWarning))
	}
	return fmt.Sprintf("%q (%s): %s, health %q%s", r.Name, r.Kind, v, r.Health, th)
}
