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
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage/memstore"
)

// Over HTTP on 127.0.0.1: a BMC whose Ensure says it cannot push (no
// EventService subscriptions on redfishtest without Config.Subscriptions)
// has its logs polled on each refresh, on the monitor's session; every
// entry is stored once; the cost per refresh is counted; a critical entry
// the BMC logs becomes the CriticalBMCEvent condition on the record.
func TestRedfishLogsPolledWhereNoPush(t *testing.T) {
	for name, style := range map[string]redfishtest.LogStyle{"DMTF": redfishtest.LogsDMTF, "ILO5": redfishtest.LogsILO5, "OpenBMC": redfishtest.LogsOpenBMC} {
		t.Run(name, func(t *testing.T) {
			events := memstore.New()
			src, err := bmcevents.NewSource(bmcevents.SourceConfig{Store: events})
			require.NoError(t, err)
			mgr, err := bmcevents.NewManager(bmcevents.ManagerConfig{Owner: subsOwner, URL: "http://127.0.0.1:1/bmc-events",
				Secret: []byte("monitor-eventlogs-test-secret")})
			require.NoError(t, err)
			srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret, Logs: style})
			defer srv.Close()
			e := newDriverEnv(t, redfish.NewDialer(redfish.Options{}), srv.Credentials(), monitor.Config{
				Subscriptions: monitor.SubscriptionsFrom(mgr.Ensure, mgr.Release),
				EventLogs:     src, Events: bmcevents.NewFollower(events), InventoryInterval: -1})
			url := srv.Address("1")
			source, err := monitor.EventSource(url)
			require.NoError(t, err)

			_, err = e.m.Add(context.Background(), url, "bmc")
			require.NoError(t, err)
			monitortest.Settle(t, e.clk, e.m)
			st := e.m.Stats()
			require.Equal(t, int64(1), st.EventPolls, "polled on the first refresh: %s", e.logs.Text())
			recs, err := events.List(context.Background(), bmcevents.Prefix+source+"/")
			require.NoError(t, err)
			stored := len(recs)
			require.Positive(t, stored)
			assert.Equal(t, int64(stored), st.EventsPolled)

			// Cost per refresh while nothing is new.
			monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m)
			srv.ClearRequests()
			before := e.m.Stats()
			monitortest.Advance(t, e.clk, 5*time.Minute, time.Second, e.m)
			after := e.m.Stats()
			reads := after.Reads - before.Reads
			require.GreaterOrEqual(t, reads, int64(4))
			assert.Equal(t, reads, after.EventPolls-before.EventPolls)
			reqs := srv.Requests()
			t.Logf("%s: %d requests in %d refreshes (%.1f per refresh): %v", name, len(reqs), reads, float64(len(reqs))/float64(reads), reqs)
			for _, r := range reqs {
				assert.Equal(t, "GET", r.Method, "polling changes nothing on the BMC")
			}
			recs, err = events.List(context.Background(), bmcevents.Prefix+source+"/")
			require.NoError(t, err)
			assert.Len(t, recs, stored, "nothing stored twice")

			// A critical entry, newer than the seeded ones (Poll reads newest
			// first, by Created, down to its cursor).
			srv.AddLogEntry("1", srv.LogRefs("1")[0], bmc.LogEntry{Created: time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), Severity: bmc.SeverityCritical,
				Message: "Power supply 2 failed", MessageID: "Power.1.0.PowerSupplyFailed"})
			monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m)
			mc, _ := e.get(t, url)
			c := conditions.Get(mc.Status.Conditions, monitor.TypeCriticalBMCEvent)
			require.NotNil(t, c)
			assert.Equal(t, conditions.True, c.Status)
			assert.Contains(t, c.Message, "Power supply 2 failed")
			e.noSecrets(t, monitortest.Secret)
		})
	}
}
