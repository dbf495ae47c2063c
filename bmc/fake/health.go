package fake

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

var (
	_ bmc.HealthReader       = (*Driver)(nil)
	_ bmc.SystemStatusReader = (*Driver)(nil)
)

// DefaultHealth is the health a fake BMC reports when Options.Health is
// not set: system "1", chassis "1" and manager "BMC", all OK.
func DefaultHealth() bmc.HealthReport {
	ok := func(id string) bmc.ResourceHealth {
		return bmc.ResourceHealth{ID: id, Health: bmc.HealthOK, Rollup: bmc.HealthOK}
	}
	return bmc.HealthReport{System: ok("1"), Chassis: []bmc.ResourceHealth{ok("1")}, Managers: []bmc.ResourceHealth{ok("BMC")}}
}

// Health implements [bmc.HealthReader]: the health set by Options.Health
// or [BMC.SetHealth] (else [DefaultHealth]), sensors included, read at the
// BMC's clock's now. Without [bmc.CapabilityHealth] it fails with an error wrapping
// [bmc.ErrNotSupported].
func (d *Driver) Health(ctx context.Context) (bmc.HealthReport, error) {
	var r bmc.HealthReport
	err := d.do(ctx, MethodHealth, nil, func() error {
		b := d.bmc
		if b.lacks[bmc.CapabilityHealth] {
			return fmt.Errorf("reading health: %w", bmc.ErrNotSupported)
		}
		r = copyHealth(b.health)
		r.ReadTime = b.clock.Now()
		return nil
	})
	if err != nil {
		return bmc.HealthReport{}, err
	}
	r.Bound()
	return r, nil
}

// SystemStatus implements [bmc.SystemStatusReader]: PowerState and the
// system's health in one call (logged as MethodSystemStatus). Without
// [bmc.CapabilityHealth] the health is unknown (only the ID is set).
func (d *Driver) SystemStatus(ctx context.Context) (bmc.SystemStatus, error) {
	var st bmc.SystemStatus
	err := d.do(ctx, MethodSystemStatus, nil, func() error {
		b := d.bmc
		b.settle()
		st.Power, st.ReadTime = b.visible(), b.clock.Now()
		st.Health = bmc.ResourceHealth{ID: b.health.System.ID}
		if !b.lacks[bmc.CapabilityHealth] {
			st.Health = copyHealth(b.health).System
		}
		return nil
	})
	if err != nil {
		return bmc.SystemStatus{Power: bmc.PowerUnknown}, err
	}
	return st, nil
}

// SetHealth replaces the health the BMC reports (a test hook; logs no
// call). r.ReadTime is ignored.
func (b *BMC) SetHealth(r bmc.HealthReport) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.health = copyHealth(r)
}

// HealthReport returns the health the BMC reports, ReadTime zero (a test
// hook; logs no call).
func (b *BMC) HealthReport() bmc.HealthReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	return copyHealth(b.health)
}

func copyHealth(r bmc.HealthReport) bmc.HealthReport {
	res := func(h bmc.ResourceHealth) bmc.ResourceHealth {
		h.Faults = append([]string(nil), h.Faults...)
		return h
	}
	out := bmc.HealthReport{System: res(r.System)}
	for _, c := range r.Chassis {
		out.Chassis = append(out.Chassis, res(c))
	}
	for _, m := range r.Managers {
		out.Managers = append(out.Managers, res(m))
	}
	out.Sensors = bmc.CloneSensors(r.Sensors)
	return out
}
