package bmc

import (
	"context"
	"strings"
	"time"
)

// Health is how a BMC rates a resource, in Redfish's words (Status.Health,
// Status.HealthRollup). Drivers map their protocol's readings to these; what
// they cannot map, or the BMC does not say, is HealthUnknown.
type Health string

// Health values.
const (
	HealthOK       Health = "OK"
	HealthWarning  Health = "Warning"
	HealthCritical Health = "Critical"
	// HealthUnknown: the BMC did not say (no Status, a null Health) or
	// said something that is none of the above.
	HealthUnknown Health = ""
)

// ParseHealth maps a BMC's word to a Health: OK, Warning or Critical in
// any case and padding; anything else is HealthUnknown.
func ParseHealth(s string) Health {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ok":
		return HealthOK
	case "warning":
		return HealthWarning
	case "critical":
		return HealthCritical
	}
	return HealthUnknown
}

// ResourceHealth is the health of one resource: a system, a chassis, a
// manager.
type ResourceHealth struct {
	// ID is the resource's ID on the BMC (Redfish: its Id, e.g. "1",
	// "BMC"; IPMI: "chassis").
	ID string `json:"id"`
	// Health is the resource's own health, without its dependents
	// (Redfish Status.Health).
	Health Health `json:"health,omitempty"`
	// Rollup is the health of the resource and everything it contains
	// (Redfish Status.HealthRollup). HealthUnknown where the BMC gives none.
	Rollup Health `json:"rollup,omitempty"`
	// Faults are what the BMC says is wrong, one short phrase each, at
	// most MaxHealthFaults (IPMI: the chassis status's fault bits, e.g.
	// "cooling fault"; Redfish: the MessageIds of Status.Conditions).
	Faults []string `json:"faults,omitempty"`
}

// MaxHealthFaults bounds ResourceHealth.Faults.
const MaxHealthFaults = 16

// HealthReport is what [HealthReader.Health] reads: the health of the
// system, of the chassis that hold it and of the managers that manage it,
// as one BMC rates them, with the time it was read.
type HealthReport struct {
	// ReadTime is when the driver read it, on the driver's clock.
	ReadTime time.Time      `json:"readTime"`
	System   ResourceHealth `json:"system"`
	// Chassis are the system's chassis (Redfish Links.Chassis), at most
	// MaxInventoryEntries.
	Chassis []ResourceHealth `json:"chassis,omitempty"`
	// Managers are the system's managers (Redfish: the manager the driver
	// acts through), at most MaxInventoryEntries.
	Managers []ResourceHealth `json:"managers,omitempty"`
	// Sensors are the BMC's sensor readings, in the BMC's order, at most
	// MaxSensors (IPMI: every full and compact sensor record of the SDR
	// repository; docs/health-events.md, "Sensor readings").
	Sensors []SensorReading `json:"sensors,omitempty"`
}

// HealthReader is implemented by drivers that can read the health the BMC
// reports for the system, its chassis and its manager (Redfish: their
// Status; IPMI: the chassis status). It changes nothing and is safe for
// concurrent use. A BMC that reports no health at all fails with an error
// wrapping [ErrNotSupported] ([CapabilityHealth]).
type HealthReader interface {
	Health(ctx context.Context) (HealthReport, error)
}

// SystemStatus is the power state and the system's own health, read in one
// request.
type SystemStatus struct {
	Power PowerState `json:"power"`
	// Health is the system's health as the answer that carried the power
	// state gives it: Health and Rollup are HealthUnknown where that
	// answer carries none (the caller then reads [HealthReader.Health] at
	// a slower rate).
	Health ResourceHealth `json:"health"`
	// ReadTime is when the driver read it, on the driver's clock.
	ReadTime time.Time `json:"readTime"`
}

// SystemStatusReader is implemented by drivers that can give the system's
// health with its power state for the cost of the power read alone
// (Redfish: the one GET of the ComputerSystem, whose Status many BMCs fill;
// IPMI: Get Chassis Status, whose fault bits come with the power bit).
// A monitor that polls power calls it instead of [Driver.PowerState] and
// gets health for no further request.
//
// SystemStatus has PowerState's contract: the same request, the same errors
// (a BMC that does not report health is no error: Health is unknown), and
// it always reads. Safe for concurrent use; it changes nothing.
type SystemStatusReader interface {
	SystemStatus(ctx context.Context) (SystemStatus, error)
}

// Bound cuts r's lists to their limits (MaxInventoryEntries resources,
// MaxHealthFaults faults each, MaxSensors sensors, MaxInventoryString
// bytes per string) and drops sensor values JSON cannot carry (NaN,
// infinities). Drivers call it before returning a report.
func (r *HealthReport) Bound() {
	cut := false
	r.Chassis = boundList(r.Chassis, &cut)
	r.Managers = boundList(r.Managers, &cut)
	if len(r.Sensors) > MaxSensors {
		r.Sensors = r.Sensors[:MaxSensors:MaxSensors]
	}
	for i := range r.Sensors {
		r.Sensors[i].bound()
	}
	r.System.bound()
	for i := range r.Chassis {
		r.Chassis[i].bound()
	}
	for i := range r.Managers {
		r.Managers[i].bound()
	}
}

func (h *ResourceHealth) bound() {
	if len(h.Faults) > MaxHealthFaults {
		h.Faults = h.Faults[:MaxHealthFaults:MaxHealthFaults]
	}
	h.ID = clipText(h.ID, MaxInventoryString)
	for i := range h.Faults {
		h.Faults[i] = clipText(h.Faults[i], MaxInventoryString)
	}
}
