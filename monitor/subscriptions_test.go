package monitor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
)

// countingSubs is a monitor.EventSubscriptions that records its calls.
type countingSubs struct {
	mu       sync.Mutex
	ensured  []string
	released int
	fail     error
}

func (c *countingSubs) Ensure(_ context.Context, drv bmc.Driver, source string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ensured = append(c.ensured, source)
	return c.fail
}

func (c *countingSubs) Release(context.Context, bmc.Driver) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released++
	return nil
}

func (c *countingSubs) counts() (ensured []string, released int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ensured...), c.released
}

func (c *countingSubs) setFail(err error) {
	c.mu.Lock()
	c.fail = err
	c.mu.Unlock()
}

// Ensure runs on the first refresh and then every SubscriptionEvery
// refreshes that read the BMC, with the BMC's source name; a failure does
// not touch Contactable; Remove releases, but not while another monitored
// system shares the BMC.
func TestSubscriptionsAtTheMonitorsCadence(t *testing.T) {
	subs := &countingSubs{}
	e := newFakeEnv(t, monitor.Config{Subscriptions: subs, SubscriptionEvery: 3, InventoryInterval: -1})
	e.add(t)
	ensured, _ := subs.counts()
	assert.Equal(t, []string{"10.0.0.1_443"}, ensured)
	src, err := monitor.EventSource(fakeURL)
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.1_443", src)

	monitortest.Advance(t, e.clk, 10*time.Minute, 10*time.Second, e.m)
	reads := e.m.Stats().Reads
	ensured, _ = subs.counts()
	assert.Equal(t, int((reads+2)/3), len(ensured), "refreshes 1, 4, 7, ... of %d", reads)
	assert.Equal(t, int64(len(ensured)), e.m.Stats().SubscriptionChecks)

	subs.setFail(fmt.Errorf("EventService answered 500 (password %s)", monitortest.Secret))
	monitortest.Advance(t, e.clk, 4*time.Minute, 10*time.Second, e.m)
	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	assert.Equal(t, monitor.ReasonContacted, monitortest.Contactable(t, mc).Reason, "a failed Ensure is not reachability")
	assert.Positive(t, e.m.Stats().SubscriptionErrors)
	assert.NotContains(t, e.logs.Text(), monitortest.Secret)
	subs.setFail(nil)

	// A second system behind the same BMC: removing one keeps the BMC's
	// subscription.
	second := "redfish://10.0.0.1/redfish/v1/Systems/2"
	_, err = e.fleet.AddNew(second, fake.Options{Power: bmc.PowerOn, Clock: e.clk})
	require.NoError(t, err)
	_, err = e.m.Add(context.Background(), second, "rack1")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	require.NoError(t, e.m.Remove(context.Background(), second))
	_, released := subs.counts()
	assert.Equal(t, 0, released)
	require.NoError(t, e.m.Remove(context.Background(), fakeURL))
	_, released = subs.counts()
	assert.Equal(t, 1, released)
}

// A BMC that cannot hold a subscription is neither a check nor an error.
func TestSubscriptionsNotSupported(t *testing.T) {
	subs := &countingSubs{fail: fmt.Errorf("no EventService: %w", bmc.ErrNotSupported)}
	e := newFakeEnv(t, monitor.Config{Subscriptions: subs, InventoryInterval: -1})
	e.add(t)
	st := e.m.Stats()
	assert.Zero(t, st.SubscriptionChecks)
	assert.Zero(t, st.SubscriptionErrors)
	assert.NoError(t, e.m.Remove(context.Background(), fakeURL))
}

func TestEventSource(t *testing.T) {
	for in, want := range map[string]string{
		"redfish://BMC-1.example.com/redfish/v1/Systems/1":  "bmc-1.example.com_443",
		"redfish+http://10.0.0.5:8000/redfish/v1/Systems/1": "10.0.0.5_8000",
		"ipmi://[fe80::1]": "fe80__1_623",
	} {
		got, err := monitor.EventSource(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
	_, err := monitor.EventSource("::bad")
	assert.Error(t, err)
}
