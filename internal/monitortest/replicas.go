package monitortest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage"
)

// Replicas runs two monitor replicas, one on each of stores (the same Store
// twice, or two clients of one database), with 30 fake BMCs on a fake clock,
// and fails t unless every machine is read once per interval (never twice
// within 0.9 of one, never less than once per two: the first interval after
// an add is spread over [I, 2I)), every read was claimed, both replicas take
// part, and a replica that stops has its machines taken over. The monitor's
// tests run it on memstore, the integration tests on PostgreSQL.
func Replicas(t testing.TB, stores [2]storage.Store) {
	t.Helper()
	const machines = 30
	const interval = time.Minute
	clk := clock.NewFake(T0)
	fleet := fake.NewFleet()
	var urls []string
	for i := 0; i < machines; i++ {
		u := fmt.Sprintf("redfish://10.1.%d.%d/redfish/v1/Systems/1", i/100, i%100+1)
		_, err := fleet.AddNew(u, fake.Options{Power: bmc.PowerOn, Clock: clk})
		require.NoError(t, err)
		urls = append(urls, u)
	}
	resolver := NewCreds("lab", bmc.Credentials{Username: "admin", Password: Secret})
	var ms []*monitor.Monitor
	var stops []context.CancelFunc
	var dones []chan error
	for i, s := range stores {
		m, err := monitor.New(monitor.Config{Store: s, Dialer: fleet, Credentials: resolver, Clock: clk, Interval: interval,
			Owner: fmt.Sprintf("replica-%d", i)})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Start(ctx) }()
		ms, stops, dones = append(ms, m), append(stops, cancel), append(dones, done)
	}
	t.Cleanup(func() {
		for i := range stops {
			stops[i]()
			<-dones[i]
		}
	})
	Settle(t, clk, ms...)
	for i, u := range urls {
		_, err := ms[i%2].Add(context.Background(), u, "lab")
		require.NoError(t, err)
	}
	Settle(t, clk, ms...)
	const run = 8 * interval
	Advance(t, clk, run, time.Second, ms...)

	total := 0
	for _, u := range urls {
		calls := fleet.Get(u).CallsTo(fake.MethodSystemStatus)
		total += len(calls)
		require.GreaterOrEqual(t, len(calls), int(run/(2*interval)), u)
		require.LessOrEqual(t, len(calls), int(run/(interval*9/10))+1, u)
		for i := 1; i < len(calls); i++ {
			gap := calls[i].Time.Sub(calls[i-1].Time)
			assert.GreaterOrEqual(t, gap, interval*9/10, "%s: reads %d and %d", u, i-1, i)
			assert.LessOrEqual(t, gap, 2*interval+2*time.Second, "%s: reads %d and %d", u, i-1, i)
		}
		mc, err := ms[0].Get(context.Background(), u)
		require.NoError(t, err)
		assert.Equal(t, conditions.True, Contactable(t, mc).Status)
	}
	a, b := ms[0].Stats(), ms[1].Stats()
	t.Logf("reads: replica-0 %d, replica-1 %d, total %d over %s; claims lost %d/%d; writes %d/%d",
		a.Reads, b.Reads, total, run, a.ClaimsLost, b.ClaimsLost, a.Writes, b.Writes)
	assert.Equal(t, int64(total), a.Reads+b.Reads, "every read was claimed")
	assert.Greater(t, a.Reads, int64(total/5), "both replicas take part")
	assert.Greater(t, b.Reads, int64(total/5), "both replicas take part")

	// Replica 1 stops: replica 0 takes its machines over within an interval
	// (plus jitter) of their last claims.
	stops[1]()
	require.NoError(t, <-dones[1])
	stops[1] = func() {}
	dones[1] = make(chan error, 1)
	dones[1] <- nil
	before := map[string]int{}
	for _, u := range urls {
		before[u] = len(fleet.Get(u).CallsTo(fake.MethodSystemStatus))
	}
	Advance(t, clk, 3*interval, time.Second, ms[0])
	for _, u := range urls {
		assert.Greater(t, len(fleet.Get(u).CallsTo(fake.MethodSystemStatus)), before[u], "%s taken over", u)
		mc, err := ms[0].Get(context.Background(), u)
		require.NoError(t, err)
		assert.Equal(t, "replica-0", mc.Refresh.Owner)
	}
}
