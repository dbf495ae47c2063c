package monitor_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage/memstore"
)

const subsOwner = "bmckit:monitor-test"

// ours returns the BMC's subscriptions of subsOwner.
func ours(srv *redfishtest.Server) []redfishtest.Subscription {
	var out []redfishtest.Subscription
	for _, s := range srv.Subscriptions() {
		if s.Context == subsOwner {
			out = append(out, s)
		}
	}
	return out
}

// The monitor keeps one subscription per BMC at its cadence, over HTTP on
// 127.0.0.1 with a bmcevents.Manager and Receiver: created on the first
// refresh (its test event reaches the receiver under the monitor's source
// name), checked on every refresh (its cost counted), given back within
// one interval after the BMC dropped it, and released on Remove.
func TestRedfishSubscriptionKeptAtTheMonitorsCadence(t *testing.T) {
	for _, style := range []redfishtest.SubscriptionStyle{redfishtest.SubscriptionsDMTF, redfishtest.SubscriptionsILO5, redfishtest.SubscriptionsOpenBMC} {
		t.Run(string(style), func(t *testing.T) {
			secret := []byte("monitor-subscription-test-secret")
			events := memstore.New()
			rcv, err := bmcevents.NewReceiver(bmcevents.Config{Store: events, Secret: secret})
			require.NoError(t, err)
			hs := httptest.NewServer(rcv)
			defer hs.Close()
			mgr, err := bmcevents.NewManager(bmcevents.ManagerConfig{Owner: subsOwner, URL: hs.URL + "/bmc-events", Secret: secret})
			require.NoError(t, err)

			srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret, Subscriptions: style})
			defer srv.Close()
			e := newDriverEnv(t, redfish.NewDialer(redfish.Options{}), srv.Credentials(), monitor.Config{
				Subscriptions: monitor.SubscriptionsFrom(mgr.Ensure, mgr.Release), InventoryInterval: -1})
			url := srv.Address("1")
			source, err := monitor.EventSource(url)
			require.NoError(t, err)
			require.NoError(t, bmcevents.ValidateSource(source))

			_, err = e.m.Add(context.Background(), url, "bmc")
			require.NoError(t, err)
			monitortest.Settle(t, e.clk, e.m)
			require.Len(t, ours(srv), 1, "created on the first refresh")
			// Its test event is pushed asynchronously, in real time, under
			// the source name.
			require.Eventually(t, func() bool {
				recs, err := events.List(context.Background(), "bmcevents/"+source+"/")
				return err == nil && len(recs) > 0
			}, 10*time.Second, 10*time.Millisecond, "the test event reached the receiver")

			// Cost per refresh while all is well.
			monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m) // past the first, spread interval
			srv.ClearRequests()
			before := e.m.Stats()
			monitortest.Advance(t, e.clk, 5*time.Minute, time.Second, e.m)
			after := e.m.Stats()
			reads := after.Reads - before.Reads
			require.GreaterOrEqual(t, reads, int64(4))
			assert.Equal(t, reads, after.SubscriptionChecks-before.SubscriptionChecks)
			reqs := srv.Requests()
			assert.Len(t, reqs, int(4*reads), "per refresh: the system, the EventService, its Subscriptions, our subscription: %v", reqs)
			for _, r := range reqs {
				assert.Equal(t, "GET", r.Method, r.Path)
			}
			t.Logf("%s: %d refreshes, %d requests (%.1f per refresh with the subscription check)", style, reads, len(reqs), float64(len(reqs))/float64(reads))

			// A BMC reset drops the subscription: back within one interval.
			id := ours(srv)[0].ID
			srv.DropSubscriptions()
			require.Empty(t, ours(srv))
			monitortest.Advance(t, e.clk, 66*time.Second, time.Second, e.m)
			got := ours(srv)
			require.Len(t, got, 1, "given back within one interval")
			assert.NotEqual(t, id, got[0].ID)
			assert.Zero(t, e.m.Stats().SubscriptionErrors)

			require.NoError(t, e.m.Remove(context.Background(), url))
			assert.Empty(t, ours(srv), "released on Remove")
			e.noSecrets(t, monitortest.Secret, string(secret))
		})
	}
}
