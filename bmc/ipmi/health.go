package ipmi

import (
	"context"

	"github.com/bougou/go-ipmi/pkg/client"

	"github.com/bmckit/bmckit/bmc"
)

var (
	_ bmc.HealthReader       = (*Driver)(nil)
	_ bmc.SystemStatusReader = (*Driver)(nil)
)

// SystemStatus implements [bmc.SystemStatusReader]: the power state and
// the health of the chassis from the one Get Chassis Status request that
// PowerState sends. The health comes from the reply's fault bits (see
// [Driver.Health]).
func (d *Driver) SystemStatus(ctx context.Context) (bmc.SystemStatus, error) {
	var st chassisStatus
	err := d.do(ctx, "read system status", func(ctx context.Context, c *client.Client) error {
		var err error
		st, err = d.chassisStatus(ctx, c)
		return err
	})
	if err != nil {
		return bmc.SystemStatus{Power: bmc.PowerUnknown}, err
	}
	r := bmc.HealthReport{System: st.health}
	r.Bound()
	return bmc.SystemStatus{Power: st.power, Health: r.System, ReadTime: d.now()}, nil
}

// Health implements [bmc.HealthReader] with one Get Chassis Status request
// and the sensors. IPMI rates one resource, the chassis, reported as the
// system (ID "chassis"; no Chassis or Managers entries), its Health and
// Rollup alike: Critical when the power subsystem reports a fault (power
// overload, main power fault, power control fault), else Warning for a
// cooling/fan fault, a drive fault, an active power interlock, front panel
// lockout or chassis intrusion, else OK. Faults names the bits set.
//
// Sensors are every full and compact sensor record of the SDR repository
// (at most bmc.MaxSensors), with the reading and the health of the BMC's
// threshold comparison (decodeSensorReading): Get SDR Repository Info and
// one Get Sensor Reading per sensor, plus a read of the records on the
// first call and whenever the repository changed (cached per driver). A
// BMC without an SDR repository reports no sensors.
func (d *Driver) Health(ctx context.Context) (bmc.HealthReport, error) {
	var st chassisStatus
	var sensors []bmc.SensorReading
	err := d.do(ctx, "read health", func(ctx context.Context, c *client.Client) error {
		var err error
		if st, err = d.chassisStatus(ctx, c); err != nil {
			return err
		}
		sensors, err = d.readSensors(ctx, c)
		return err
	})
	if err != nil {
		return bmc.HealthReport{}, err
	}
	r := bmc.HealthReport{ReadTime: d.now(), System: st.health, Sensors: sensors}
	r.Bound()
	return r, nil
}
