package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/task"
)

// rolloutFleet is what "rollout -simulate N" runs against: N simulated
// Redfish BMCs, one system each (a BMC's firmware is its own, so one
// server's BIOS update is not its neighbour's), each on its own endpoint,
// powered on, with BMC and BIOS firmware at 1.0.0, ten to a rack (label
// rack=rack-1, rack-2, ...). Updates take twice the power delay and take
// effect when the system next boots, as in "firmware update -simulate". A
// server in failing ends its update task in an exception (ApplyFailed).
//
// Every accepted state-changing request of the fleet is logged, in one
// order across all BMCs (changes): a test reads how many servers were
// being changed at once.
type rolloutFleet struct {
	bmcs    []*redfishtest.Server
	servers []rollout.Server
	creds   bmc.Credentials
	images  *httptest.Server

	mu      sync.Mutex
	changes []fleetChange
}

// fleetChange is one accepted state-changing request of server Index.
type fleetChange struct {
	Seq   int // order across the fleet, from 1
	Index int
	What  string
}

// rolloutSimFirmware is what the built-in template installs.
const (
	rolloutSimComponent = "BIOS"
	rolloutSimVersion   = "2.0.0"
)

func startRolloutFleet(n int, powerDelay time.Duration, failing map[int]bool) *rolloutFleet {
	f := &rolloutFleet{creds: bmc.Credentials{Username: "admin", Password: "sim-" + strconv.Itoa(rand.IntN(1e9))}}
	f.images = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		_, _ = w.Write(redfishtest.FirmwareImage(q.Get("component"), q.Get("version")))
	}))
	for i := 0; i < n; i++ {
		srv := redfishtest.NewServer(redfishtest.Config{
			Username: f.creds.Username, Password: f.creds.Password, PowerDelay: powerDelay,
			Firmware:      redfishtest.FirmwareConfig{Duration: 2 * powerDelay, ActivateOnReset: true, Fail: failing[i]},
			OnStateChange: func(c redfishtest.StateChange) { f.changed(i, c) },
		})
		srv.SetPower("1", "On")
		f.bmcs = append(f.bmcs, srv)
		f.servers = append(f.servers, rollout.Server{
			Name:   fmt.Sprintf("node-%03d", i+1),
			BMC:    srv.Address("1"),
			Labels: map[string]string{"rack": fmt.Sprintf("rack-%d", i/10+1)},
		})
	}
	return f
}

func (f *rolloutFleet) changed(i int, c redfishtest.StateChange) {
	if c.Note != "" {
		return // answered but not applied
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, fleetChange{Seq: len(f.changes) + 1, Index: i, What: c.What})
}

// stateChanges returns the fleet's log so far.
func (f *rolloutFleet) stateChanges() []fleetChange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fleetChange(nil), f.changes...)
}

// imageURL is where the simulated BMCs fetch an image that installs
// version on component.
func (f *rolloutFleet) imageURL(component, version string) string {
	return f.images.URL + "/firmware.bin?" + url.Values{"component": {component}, "version": {version}}.Encode()
}

// template is the built-in template of "rollout -simulate": BIOS to 2.0.0,
// an image the simulated BMCs install.
func (f *rolloutFleet) template() task.Spec {
	return task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{
		ImageURI: f.imageURL(rolloutSimComponent, rolloutSimVersion), Component: rolloutSimComponent,
		Version: rolloutSimVersion, Reset: task.FirmwareResetAuto,
	}}
}

// simulatedImage points a firmwareUpdate task at an image the fleet serves.
func (f *rolloutFleet) simulatedImage(ts *task.Spec) {
	if fu := ts.FirmwareUpdate; fu != nil {
		a := *fu
		a.ImageURI = f.imageURL(fu.Component, fu.Version)
		ts.FirmwareUpdate = &a
	}
}

func (f *rolloutFleet) close() {
	for _, s := range f.bmcs {
		s.Close()
	}
	f.images.Close()
}

// failingServers picks round(n*pct/100) of n servers to fail (-fail),
// spread evenly from the last one back, so a canary at the front runs on
// healthy servers.
func failingServers(n int, pct float64) map[int]bool {
	k := int(float64(n)*pct/100 + 0.5)
	if pct > 0 && k == 0 {
		k = 1
	}
	k = min(k, n)
	out := map[int]bool{}
	for j := 0; j < k; j++ {
		out[n-1-j*n/k] = true
	}
	return out
}
