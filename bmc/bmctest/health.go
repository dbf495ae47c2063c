package bmctest

import (
	"reflect"
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
}

// health checks bmc.HealthReader and bmc.SystemStatusReader:
//
//   - Read: a well-formed report with a read time; equal to what the peer
//     holds where Target.Health says;
//   - Changes: a change of the peer's health is read at once (no cache);
//   - SystemStatus: the power state PowerState reads, with the system's
//     health Health reads (or unknown, where the peer lacks health).
func (s *suite) health(t *testing.T, path string) {
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
