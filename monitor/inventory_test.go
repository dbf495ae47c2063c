package monitor_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// The inventory is read on the first refresh, stored beside the record
// (which stays small), and read again only after InventoryInterval (±10%),
// not on the power refreshes between.
func TestInventoryReadOnceThenEveryInterval(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{InventoryInterval: time.Hour})
	e.add(t)

	require.Len(t, e.srv.CallsTo(fake.MethodInventory), 1, "read on the first refresh")
	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	st := mc.Status.Inventory
	require.NotNil(t, st)
	assert.Equal(t, monitortest.T0, st.ReadTime)
	assert.Equal(t, 0, st.Failures)
	assert.Empty(t, st.Error)
	assert.GreaterOrEqual(t, st.Next.Sub(monitortest.T0), 54*time.Minute)
	assert.LessOrEqual(t, st.Next.Sub(monitortest.T0), 66*time.Minute)
	inv, err := e.m.Inventory(context.Background(), fakeURL)
	require.NoError(t, err)
	assert.Equal(t, mc.System, inv.System)
	assert.Equal(t, monitortest.T0, inv.ReadTime)
	assert.Equal(t, fake.DefaultInventory().System, inv.Inventory.System)
	assert.Equal(t, len(fake.DefaultInventory().Processors), len(inv.Inventory.Processors))

	// The machine record holds the schedule, not the inventory.
	key, _ := e.m.Key(fakeURL)
	raw, err := e.store.Get(context.Background(), key)
	require.NoError(t, err)
	assert.NotContains(t, string(raw.Value), inv.Inventory.System.SerialNumber)
	assert.Contains(t, string(raw.Value), `"inventory":{"readTime":`)

	// Power reads every minute; no inventory read before 0.9 h.
	monitortest.Advance(t, e.clk, 53*time.Minute, 10*time.Second, e.m)
	assert.Len(t, e.srv.CallsTo(fake.MethodInventory), 1)
	powerReads := len(e.srv.CallsTo(fake.MethodSystemStatus))
	assert.GreaterOrEqual(t, powerReads, 45)

	// Then one more by 1.1 h (and at most one refresh interval late).
	monitortest.Advance(t, e.clk, 15*time.Minute, 10*time.Second, e.m)
	calls := e.srv.CallsTo(fake.MethodInventory)
	require.Len(t, calls, 2)
	gap := calls[1].Time.Sub(calls[0].Time)
	assert.GreaterOrEqual(t, gap, 54*time.Minute)
	assert.LessOrEqual(t, gap, 66*time.Minute+66*time.Second+10*time.Second)
	powerReads = len(e.srv.CallsTo(fake.MethodSystemStatus))
	st = monitortest.Record(t, e.store, e.m, fakeURL).Status.Inventory
	assert.Equal(t, calls[1].Time, st.ReadTime)
	stats := e.m.Stats()
	assert.Equal(t, int64(2), stats.InventoryReads)
	assert.Equal(t, int64(powerReads), stats.Reads)
	t.Logf("68 min: %d power reads, %d inventory reads (gap %s); record %d bytes", powerReads, len(calls), gap, len(raw.Value))

	// Remove deletes the inventory with the record.
	require.NoError(t, e.m.Remove(context.Background(), fakeURL))
	_, err = e.m.Inventory(context.Background(), fakeURL)
	assert.ErrorIs(t, err, storage.ErrNotFound)
}

func TestInventoryOff(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{InventoryInterval: -1})
	e.add(t)
	monitortest.Advance(t, e.clk, 5*time.Minute, 10*time.Second, e.m)
	assert.Empty(t, e.srv.CallsTo(fake.MethodInventory))
	assert.Nil(t, monitortest.Record(t, e.store, e.m, fakeURL).Status.Inventory)
}

// A failing inventory read leaves Contactable and the power reads alone,
// is retried after Interval, then 2 and 4 Intervals, and its error (which
// echoes the password) is stored scrubbed.
func TestInventoryFailureRetriedWithoutBlockingPowerReads(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{InventoryInterval: time.Hour})
	var failures atomic.Int32
	failures.Store(3)
	e.srv.SetHook(fake.MethodInventory, func(context.Context, fake.Call) error {
		if failures.Add(-1) < 0 {
			return nil
		}
		return fmt.Errorf("inventory service busy (user admin, password %s)", monitortest.Secret)
	})
	e.add(t)

	mc := monitortest.Record(t, e.store, e.m, fakeURL) // checks the raw record for the secret
	assert.Equal(t, conditions.True, monitortest.Contactable(t, mc).Status)
	st := mc.Status.Inventory
	require.NotNil(t, st)
	assert.Equal(t, 1, st.Failures)
	assert.Contains(t, st.Error, "inventory service busy")
	assert.True(t, st.ReadTime.IsZero())
	_, err := e.m.Inventory(context.Background(), fakeURL)
	assert.ErrorIs(t, err, storage.ErrNotFound)

	monitortest.Advance(t, e.clk, 15*time.Minute, 10*time.Second, e.m)
	calls := e.srv.CallsTo(fake.MethodInventory)
	require.Len(t, calls, 4, "three failures, then a success")
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		gap := calls[i+1].Time.Sub(calls[i].Time)
		assert.GreaterOrEqual(t, gap, want*9/10, "retry %d", i+1)
		assert.LessOrEqual(t, gap, want*11/10+66*time.Second+10*time.Second, "retry %d", i+1)
	}
	power := e.srv.CallsTo(fake.MethodSystemStatus)
	assert.GreaterOrEqual(t, len(power), 13, "a power read every minute all along")
	for i := 1; i < len(power); i++ {
		assert.LessOrEqual(t, power[i].Time.Sub(power[i-1].Time), 2*time.Minute, "power read %d", i)
	}
	mc = monitortest.Record(t, e.store, e.m, fakeURL)
	st = mc.Status.Inventory
	assert.Equal(t, 0, st.Failures)
	assert.Empty(t, st.Error)
	assert.Equal(t, calls[3].Time, st.ReadTime)
	assert.Equal(t, conditions.True, monitortest.Contactable(t, mc).Status)
	assert.Equal(t, int64(3), e.m.Stats().InventoryFailed)
	assert.NotContains(t, e.logs.Text(), monitortest.Secret)
	t.Logf("15 min: %d power reads, %d inventory reads (3 failed)", len(power), len(calls))
}

// A BMC that cannot report an inventory is asked again only after
// InventoryInterval.
func TestInventoryNotSupportedWaitsAWholeInterval(t *testing.T) {
	e := newFakeEnvWith(t, monitor.Config{InventoryInterval: time.Hour}, fake.Options{Power: bmc.PowerOn, Unsupported: []fake.Capability{bmc.CapabilityInventory}})
	e.add(t)
	st := monitortest.Record(t, e.store, e.m, fakeURL).Status.Inventory
	require.NotNil(t, st)
	assert.Equal(t, 1, st.Failures)
	assert.GreaterOrEqual(t, st.Next.Sub(monitortest.T0), 54*time.Minute)
	monitortest.Advance(t, e.clk, 10*time.Minute, 10*time.Second, e.m)
	assert.Len(t, e.srv.CallsTo(fake.MethodInventory), 1)
}

// runMonitor starts m; stop stops it and waits.
func runMonitor(t *testing.T, m *monitor.Monitor) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}

// Two replicas share one store: each machine's inventory is read by one of
// them per InventoryInterval, and a replica restarted with the same Owner
// keeps the schedule (no read at start).
func TestInventoryOneReplicaAndRestart(t *testing.T) {
	const machines = 6
	clk := clock.NewFake(monitortest.T0)
	store := memstore.New()
	fleet := fake.NewFleet()
	var urls []string
	for i := range machines {
		u := fmt.Sprintf("redfish://10.2.0.%d/redfish/v1/Systems/1", i+1)
		_, err := fleet.AddNew(u, fake.Options{Power: bmc.PowerOn, Clock: clk})
		require.NoError(t, err)
		urls = append(urls, u)
	}
	creds := monitortest.NewCreds("lab", bmc.Credentials{Username: "admin", Password: monitortest.Secret})
	newReplica := func(owner string) *monitor.Monitor {
		m, err := monitor.New(monitor.Config{Store: store, Dialer: fleet, Credentials: creds, Clock: clk, Owner: owner,
			Interval: time.Minute, InventoryInterval: 30 * time.Minute})
		require.NoError(t, err)
		return m
	}
	a, b := newReplica("replica-a"), newReplica("replica-b")
	stopA := runMonitor(t, a)
	runMonitor(t, b)
	monitortest.Settle(t, clk, a, b)
	for i, u := range urls {
		_, err := []*monitor.Monitor{a, b}[i%2].Add(context.Background(), u, "lab")
		require.NoError(t, err)
	}
	monitortest.Settle(t, clk, a, b)
	monitortest.Advance(t, clk, 45*time.Minute, 10*time.Second, a, b)

	stopA()
	a2 := newReplica("replica-a")
	runMonitor(t, a2)
	monitortest.Settle(t, clk, a2, b)
	monitortest.Advance(t, clk, 55*time.Minute, 10*time.Second, a2, b)

	total := 0
	for _, u := range urls {
		calls := fleet.Get(u).CallsTo(fake.MethodInventory)
		total += len(calls)
		assert.GreaterOrEqual(t, len(calls), 3, u)
		assert.LessOrEqual(t, len(calls), 4, u)
		for i := 1; i < len(calls); i++ {
			assert.GreaterOrEqual(t, calls[i].Time.Sub(calls[i-1].Time), 27*time.Minute, "%s: inventory reads %d and %d", u, i-1, i)
		}
	}
	sa, sb, sa2 := a.Stats(), b.Stats(), a2.Stats()
	assert.Equal(t, int64(total), sa.InventoryReads+sb.InventoryReads+sa2.InventoryReads, "every read counted once")
	assert.Positive(t, sb.InventoryReads)
	assert.Positive(t, sa.InventoryReads+sa2.InventoryReads)
	t.Logf("100 min, %d machines: %d inventory reads (replica-a %d, restarted %d, replica-b %d); power reads %d/%d/%d",
		machines, total, sa.InventoryReads, sa2.InventoryReads, sb.InventoryReads, sa.Reads, sa2.Reads, sb.Reads)
}
