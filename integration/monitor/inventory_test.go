package monitor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
)

// The inventory over HTTP: read on the first refresh (its requests
// counted), then the refreshes in between are one GET each, and the next
// inventory comes after InventoryInterval (±10%).
func TestRedfishInventoryOncePerInterval(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret})
	defer srv.Close()
	e := newDriverEnv(t, redfish.NewDialer(redfish.Options{}), srv.Credentials(), monitor.Config{InventoryInterval: time.Hour})
	url := srv.Address("1")
	_, err := e.m.Add(context.Background(), url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	first := len(srv.Requests())
	inv, err := e.m.Inventory(context.Background(), url)
	require.NoError(t, err)
	assert.NotEmpty(t, inv.Inventory.Processors)
	assert.Equal(t, monitortest.T0, inv.ReadTime)

	srv.ClearRequests()
	before := e.m.Stats().Reads
	monitortest.Advance(t, e.clk, 50*time.Minute, 10*time.Second, e.m)
	reads := e.m.Stats().Reads - before
	assert.Len(t, srv.Requests(), int(reads), "one GET per refresh between inventories")

	srv.ClearRequests()
	before = e.m.Stats().Reads
	monitortest.Advance(t, e.clk, 20*time.Minute, 10*time.Second, e.m)
	reads = e.m.Stats().Reads - before
	assert.Equal(t, int64(2), e.m.Stats().InventoryReads)
	again := len(srv.Requests()) - int(reads)
	assert.Greater(t, again, 1, "an inventory read is several GETs")
	assert.Less(t, again, first, "the first refresh also dialed (service root, login)")
	mc, _ := e.get(t, url)
	assert.Equal(t, 0, mc.Status.Inventory.Failures)
	t.Logf("first refresh: %d requests (dial and login, power read, inventory); an inventory read: %d requests; refreshes between: 1 each", first, again)
	e.noSecrets(t, monitortest.Secret)
}
