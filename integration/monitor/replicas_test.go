package monitor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/internal/pgtest"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
)

// Two replicas on one store, on a fake clock: every machine is read once
// per interval (never twice within 0.9 of one, never less than once per two:
// the first interval after an add is spread over [I, 2I)), both replicas
// take part, and a replica that stops has its machines taken over.
func testReplicas(t *testing.T, stores [2]storage.Store) {
	const machines = 30
	const interval = time.Minute
	clk := clock.NewFake(t0)
	fleet := fake.NewFleet()
	var urls []string
	for i := 0; i < machines; i++ {
		u := fmt.Sprintf("redfish://10.1.%d.%d/redfish/v1/Systems/1", i/100, i%100+1)
		_, err := fleet.AddNew(u, fake.Options{Power: bmc.PowerOn, Clock: clk})
		require.NoError(t, err)
		urls = append(urls, u)
	}
	resolver := newCreds("lab", bmc.Credentials{Username: "admin", Password: secret})
	var ms []*Monitor
	var stops []context.CancelFunc
	var dones []chan error
	for i, s := range stores {
		m, err := New(Config{Store: s, Dialer: fleet, Credentials: resolver, Clock: clk, Interval: interval, Owner: fmt.Sprintf("replica-%d", i)})
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
	settle(t, clk, ms...)
	for i, u := range urls {
		_, err := ms[i%2].Add(context.Background(), u, "lab")
		require.NoError(t, err)
	}
	settle(t, clk, ms...)
	const run = 8 * interval
	advance(t, clk, run, time.Second, ms...)

	total := 0
	for _, u := range urls {
		calls := fleet.Get(u).CallsTo(fake.MethodPowerState)
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
		assert.Equal(t, conditions.True, contactable(t, mc).Status)
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
		before[u] = len(fleet.Get(u).CallsTo(fake.MethodPowerState))
	}
	advance(t, clk, 3*interval, time.Second, ms[0])
	for _, u := range urls {
		assert.Greater(t, len(fleet.Get(u).CallsTo(fake.MethodPowerState)), before[u], "%s taken over", u)
		mc, err := ms[0].Get(context.Background(), u)
		require.NoError(t, err)
		assert.Equal(t, "replica-0", mc.Refresh.Owner)
	}
}

func TestReplicasMemstore(t *testing.T) {
	s := memstore.New()
	testReplicas(t, [2]storage.Store{s, s})
}

func TestReplicasPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	var stores [2]storage.Store
	for i := range stores {
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: schema}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		stores[i] = s
	}
	testReplicas(t, stores)
}
