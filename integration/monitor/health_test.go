package monitor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
)

// Health on Redfish over HTTP: the system's Status comes with the one GET
// of each refresh (0 more requests), a change is seen within one interval,
// and Critical sets Healthy False until the BMC reports OK again.
func TestRedfishHealthInThePowerRead(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret})
	defer srv.Close()
	var changes []monitor.HealthEvent
	e := newDriverEnv(t, redfish.NewDialer(redfish.Options{}), srv.Credentials(), monitor.Config{
		Observer: monitor.Observer{HealthChanged: func(ev monitor.HealthEvent) { changes = append(changes, ev) }}, // one machine: one refresh at a time
	})
	url := srv.Address("1")
	_, err := e.m.Add(context.Background(), url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m) // past the first, spread interval
	mc, _ := e.get(t, url)
	require.NotNil(t, mc.Healthy())
	assert.Equal(t, monitor.ReasonHealthOK, mc.Healthy().Reason)

	srv.ClearRequests()
	before := e.m.Stats().Reads
	srv.SetHealth("/redfish/v1/Systems/1", redfishtest.HealthState{Health: "OK", HealthRollup: "Critical"})
	monitortest.Advance(t, e.clk, 66*time.Second, time.Second, e.m) // one interval (+10%)
	mc, c := e.get(t, url)
	assert.Equal(t, conditions.True, c.Status)
	h := mc.Healthy()
	require.NotNil(t, h)
	assert.Equal(t, conditions.False, h.Status)
	assert.Equal(t, monitor.ReasonHealthCritical, h.Reason)
	assert.Equal(t, bmc.HealthCritical, mc.Status.Health.System.Rollup)

	srv.SetHealth("/redfish/v1/Systems/1", redfishtest.HealthState{Health: "OK", HealthRollup: "OK"})
	monitortest.Advance(t, e.clk, 66*time.Second, time.Second, e.m)
	mc, _ = e.get(t, url)
	assert.Equal(t, conditions.True, mc.Healthy().Status, "cleared")

	reads := e.m.Stats().Reads - before
	require.GreaterOrEqual(t, reads, int64(2))
	reqs := srv.Requests()
	assert.Len(t, reqs, int(reads), "one request per refresh, health included: %v", reqs)
	for _, r := range reqs {
		assert.Equal(t, "GET", r.Method)
		assert.Equal(t, "/redfish/v1/Systems/1", r.Path)
	}
	require.Len(t, changes, 3) // unknown -> OK -> Critical -> OK
	assert.Equal(t, bmc.HealthCritical, changes[1].To)
	assert.Equal(t, bmc.HealthOK, changes[2].To)
	e.noSecrets(t, monitortest.Secret)
}

// A BMC whose system resource has no Status: the full report is read on
// the first refresh and every HealthEvery refreshes (its cost counted),
// and a Critical chassis sets Healthy False.
func TestRedfishHealthReportEveryNthRefresh(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret})
	defer srv.Close()
	e := newDriverEnv(t, redfish.NewDialer(redfish.Options{}), srv.Credentials(), monitor.Config{HealthEvery: 4})
	srv.SetHealth("/redfish/v1/Systems/1", redfishtest.HealthState{})
	srv.SetHealth("/redfish/v1/Chassis/1", redfishtest.HealthState{Health: "Critical", HealthRollup: "Critical"})
	url := srv.Address("1")
	_, err := e.m.Add(context.Background(), url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	mc, _ := e.get(t, url)
	h := mc.Healthy()
	require.NotNil(t, h, "%+v", mc.Status)
	assert.Equal(t, conditions.False, h.Status)
	assert.Contains(t, h.Message, "chassis 1 Critical")

	srv.ClearRequests()
	before := e.m.Stats().Reads
	monitortest.Advance(t, e.clk, 12*time.Minute, time.Second, e.m)
	reads := e.m.Stats().Reads - before
	systemGets, other := 0, 0
	for _, r := range srv.Requests() {
		if r.Method == "GET" && r.Path == "/redfish/v1/Systems/1" {
			systemGets++
		} else {
			other++
		}
	}
	reports := systemGets - int(reads) // Health GETs the system once more
	assert.GreaterOrEqual(t, reports, int(reads/4)-1)
	assert.LessOrEqual(t, reports, int(reads/4)+1)
	assert.Equal(t, 2*reports, other, "a report: the system, the chassis and the manager")
	t.Logf("%d refreshes: %d requests (%d full reports)", reads, systemGets+other, reports)
}
