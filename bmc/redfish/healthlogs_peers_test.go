package redfish_test

import (
	"strconv"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// simPeers are the bmctest views of a simulator's health and event logs
// for the system the address names (systemID: an Id, a UUID, or "" for
// the only one): what the suite compares the driver's reads with.
func simPeers(srv *redfishtest.Server, systemID string) (*bmctest.HealthPeer, *bmctest.LogPeer) {
	id := simID(systemID)
	sys, chassis, mgr := "/redfish/v1/Systems/"+id, "/redfish/v1/Chassis/1", "/redfish/v1/Managers/BMC"
	res := func(rid, path string) bmc.ResourceHealth {
		h := srv.Health(path)
		return bmc.ResourceHealth{ID: rid, Health: bmc.ParseHealth(h.Health), Rollup: bmc.ParseHealth(h.HealthRollup)}
	}
	health := &bmctest.HealthPeer{
		Want: func() bmc.HealthReport {
			return bmc.HealthReport{System: res(id, sys), Chassis: []bmc.ResourceHealth{res("1", chassis)}, Managers: []bmc.ResourceHealth{res("BMC", mgr)},
				Sensors: srv.Sensors()}
		},
		SetSensor: func(name string, h bmc.Health) {
			l := srv.Sensors()
			for i := range l {
				if l[i].Name == name {
					l[i].Health = h
				}
			}
			srv.SetSensors(l)
		},
		Set: func(h bmc.Health) {
			for _, p := range []string{sys, chassis, mgr} {
				srv.SetHealth(p, redfishtest.HealthState{Health: string(h), HealthRollup: string(h)})
			}
		},
	}
	logs := &bmctest.LogPeer{
		Entries: func(ref bmc.LogRef) []bmc.LogEntry { return srv.LogEntries(id, ref) },
		Add: func(ref bmc.LogRef, n int) {
			for range n {
				srv.AddLogEntry(id, ref, bmc.LogEntry{Severity: bmc.SeverityWarning, Message: "added by bmctest", MessageID: "Test.1.0.Added"})
			}
		},
	}
	return health, logs
}

// simID is the simulator's ID ("1", ...) of the system an address names
// by ID or UUID ("" for the only one).
func simID(systemID string) string {
	id := systemID
	if id == "" {
		id = "1"
	}
	for i := 1; i <= 64; i++ {
		if systemID == redfishtest.SystemUUID(i) {
			id = strconv.Itoa(i)
		}
	}
	return id
}
