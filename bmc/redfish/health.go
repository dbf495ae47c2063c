package redfish

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bmckit/bmckit/bmc"
)

var (
	_ bmc.HealthReader       = (*Driver)(nil)
	_ bmc.SystemStatusReader = (*Driver)(nil)
)

// healthStatus is the part of a resource's Status the driver reads. Its
// Health and HealthRollup are kept as strings: vendors write them in other
// cases, and bmc.ParseHealth maps what it knows.
type healthStatus struct {
	Health       string
	HealthRollup string
	Conditions   []struct {
		MessageID string `json:"MessageId"`
	}
}

// resourceHealth maps a resource's Status (nil: none) to bmc's.
func resourceHealth(id string, st *healthStatus) bmc.ResourceHealth {
	h := bmc.ResourceHealth{ID: id}
	if st == nil {
		return h
	}
	h.Health, h.Rollup = bmc.ParseHealth(st.Health), bmc.ParseHealth(st.HealthRollup)
	for _, c := range st.Conditions {
		if id := strings.TrimSpace(c.MessageID); id != "" && len(h.Faults) < bmc.MaxHealthFaults {
			h.Faults = append(h.Faults, id)
		}
	}
	return h
}

// SystemStatus implements [bmc.SystemStatusReader]: the power state and
// the system's Status from the one GET of the ComputerSystem that
// PowerState makes. A system without Status reads health unknown.
func (d *Driver) SystemStatus(ctx context.Context) (bmc.SystemStatus, error) {
	const op = "read system status"
	done, err := d.begin()
	if err != nil {
		return bmc.SystemStatus{Power: bmc.PowerUnknown}, d.opErr(op, err)
	}
	defer done()
	doc, err := d.readSystem(ctx)
	if err == nil {
		err = doc.errPowerState()
	}
	if err != nil {
		return bmc.SystemStatus{Power: bmc.PowerUnknown}, d.opErr(op, err)
	}
	bounded := bmc.HealthReport{System: resourceHealth(doc.ID, doc.Status)}
	bounded.Bound()
	return bmc.SystemStatus{Power: powerState(doc.PowerState), Health: bounded.System, ReadTime: d.s.opts.Clock.Now()}, nil
}

// Health implements [bmc.HealthReader]: the Status of the system (one
// GET), of each chassis its Links.Chassis names (one GET each, at most
// bmc.MaxInventoryEntries) and of its manager (one GET), and the sensors
// of the Thermal and Power resources each chassis links (one GET each;
// sensors.go). A resource without
// Status is reported with its health unknown; when none of them has one,
// the error wraps [bmc.ErrNotSupported].
func (d *Driver) Health(ctx context.Context) (bmc.HealthReport, error) {
	const op = "read health"
	done, err := d.begin()
	if err != nil {
		return bmc.HealthReport{}, d.opErr(op, err)
	}
	defer done()
	r, err := d.health(ctx)
	if err != nil {
		return bmc.HealthReport{}, d.opErr(op, err)
	}
	return r, nil
}

func (d *Driver) health(ctx context.Context) (bmc.HealthReport, error) {
	doc, err := d.readSystem(ctx)
	if err != nil {
		return bmc.HealthReport{}, err
	}
	r := bmc.HealthReport{System: resourceHealth(doc.ID, doc.Status)}
	reported := doc.Status != nil
	type resource struct {
		ID     string `json:"Id"`
		Status *healthStatus
		sensorLinks
	}
	read := func(uri string) (bmc.ResourceHealth, sensorLinks, error) {
		var res resource
		if _, err := d.getJSON(ctx, uri, &res); err != nil {
			return bmc.ResourceHealth{}, sensorLinks{}, fmt.Errorf("read the health of %s: %w", uri, err)
		}
		reported = reported || res.Status != nil
		if res.ID == "" {
			res.ID = lastSegment(uri)
		}
		return resourceHealth(res.ID, res.Status), res.sensorLinks, nil
	}
	chassis := doc.Chassis
	if len(chassis) > bmc.MaxInventoryEntries {
		chassis = chassis[:bmc.MaxInventoryEntries]
	}
	for _, uri := range chassis {
		h, links, err := read(uri)
		if err != nil {
			return bmc.HealthReport{}, err
		}
		r.Chassis = append(r.Chassis, h)
		if len(r.Sensors) < bmc.MaxSensors {
			sensors, err := d.chassisSensors(ctx, links)
			if err != nil {
				return bmc.HealthReport{}, err
			}
			r.Sensors = append(r.Sensors, sensors...)
		}
	}
	if m, err := d.manager(ctx); err == nil {
		h, _, err := read(m.uri)
		if err != nil {
			return bmc.HealthReport{}, err
		}
		r.Managers = append(r.Managers, h)
	} else if !errors.Is(err, bmc.ErrNotSupported) {
		return bmc.HealthReport{}, err
	}
	if !reported {
		return bmc.HealthReport{}, fmt.Errorf("neither the system %s nor its chassis or manager has a Status: %w", d.systemURI, bmc.ErrNotSupported)
	}
	r.ReadTime = d.s.opts.Clock.Now()
	r.Bound()
	return r, nil
}

// lastSegment is the last segment of a resource path, its Id by
// convention.
func lastSegment(uri string) string {
	p := strings.TrimRight(pathOf(uri), "/")
	return p[strings.LastIndex(p, "/")+1:]
}
