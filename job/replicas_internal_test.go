package job

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
)

func TestShareOf(t *testing.T) {
	for _, c := range []struct{ claimable, live, want int }{
		{0, 1, 1},
		{30, 1, 33},       // alone: more than every system
		{30, 3, 11},       // 10 + 1
		{30, 2, 16},       // 15 + 1
		{10, 3, 5},        // ceil(10/3) + 1
		{10000, 3, 3667},  // 3334 + 333
		{10000, 0, 11000}, // nobody counted: this runner is alive
	} {
		assert.Equal(t, c.want, shareOf(c.claimable, c.live), "shareOf(%d, %d)", c.claimable, c.live)
	}
}

// putRunnerRecord writes another runner's heartbeat record as its Runner
// would, with expires as its wall clock says.
func putRunnerRecord(t *testing.T, s storage.Store, owner string, held int, expires time.Time) {
	t.Helper()
	data, err := json.Marshal(runnerRecord{Held: held, LeaseMillis: 30000, Expires: expires})
	require.NoError(t, err)
	key := "bmckit/runners/" + owner
	rec, err := s.Get(context.Background(), key)
	if err == nil {
		_, err = s.Update(context.Background(), key, data, rec.Revision)
	} else {
		_, err = s.Create(context.Background(), key, data)
	}
	require.NoError(t, err)
}

// A replica counts another as alive until it has seen that one's heartbeat
// record unchanged for a whole lease on its own clock, whatever the
// record's wall-clock expiry says (clock skew cannot shorten or stretch
// it); a record judged dead is deleted, and the share grows.
func TestPeersJudgeLivenessByObservation(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	store := memstore.New()
	r, err := NewRunner(Config{Store: store, StepperConfig: StepperConfig{Dialer: fake.NewFleet(), Clock: clk}, Owner: "me"})
	require.NoError(t, err)
	p := r.peers
	p.start(ctx)
	rec, err := store.Get(ctx, "bmckit/runners/me")
	require.NoError(t, err, "the runner's own record is written at Start")
	assert.JSONEq(t, `{"held":0,"leaseMillis":30000,"expires":"2026-05-01T12:00:30Z"}`, string(rec.Value))
	assert.Equal(t, 33, p.share(30), "alone: every system and more")

	// b's clock is a year behind ours, c's a year ahead.
	putRunnerRecord(t, store, "b", 10, t0.AddDate(-1, 0, 0))
	putRunnerRecord(t, store, "c", 10, t0.AddDate(1, 0, 0))
	require.NoError(t, p.list(ctx))
	assert.Equal(t, 11, p.share(30), "three alive")

	clk.Advance(20 * time.Second)
	putRunnerRecord(t, store, "b", 10, t0.AddDate(-1, 0, 0)) // b renews; c does not
	require.NoError(t, p.list(ctx))
	assert.Equal(t, 11, p.share(30), "c seen unchanged for 20s of a 30s lease: alive")

	clk.Advance(10 * time.Second)
	require.NoError(t, p.list(ctx))
	assert.Equal(t, 16, p.share(30), "c seen unchanged for a lease: dead; b renewed 10s ago")
	_, err = store.Get(ctx, "bmckit/runners/c")
	assert.ErrorIs(t, err, storage.ErrNotFound, "a dead runner's record is deleted")

	// Giving back: over the share, and only while another has room.
	assert.False(t, p.giveBack(16, 30), "at the share")
	assert.True(t, p.giveBack(17, 30), "over it; b holds 10 of its 16")
	putRunnerRecord(t, store, "b", 16, t0)
	require.NoError(t, p.list(ctx))
	assert.False(t, p.giveBack(17, 30), "b has no room either")

	// Another replica deleted this runner's record (it was paused for a
	// lease): the next heartbeat writes it again.
	rec, err = store.Get(ctx, "bmckit/runners/me")
	require.NoError(t, err)
	require.NoError(t, store.Delete(ctx, "bmckit/runners/me", rec.Revision))
	require.NoError(t, p.write(ctx, 7))
	rec, err = store.Get(ctx, "bmckit/runners/me")
	require.NoError(t, err)
	assert.Contains(t, string(rec.Value), `"held":7`)

	p.stop(ctx)
	_, err = store.Get(ctx, "bmckit/runners/me")
	assert.ErrorIs(t, err, storage.ErrNotFound, "deleted at Start's return")
}

// A runner restarted with the same Owner takes its own record over, and a
// watched system that nobody takes for a lease becomes overdue: claimed
// whatever the share.
func TestPeersRestartAndOverdue(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	store := memstore.New()
	putRunnerRecord(t, store, "me", 12, t0.Add(-time.Minute)) // left by the previous process
	r, err := NewRunner(Config{Store: store, StepperConfig: StepperConfig{Dialer: fake.NewFleet(), Clock: clk}, Owner: "me"})
	require.NoError(t, err)
	p := r.peers
	p.start(ctx)
	rec, err := store.Get(ctx, "bmckit/runners/me")
	require.NoError(t, err)
	assert.Contains(t, string(rec.Value), `"held":0`)
	assert.Equal(t, 33, p.share(30), "its own old record is not another replica")

	p.watch(ctx, []string{"10.0.0.1:443/redfish/v1/Systems/1"}) // no lock: takeable
	assert.False(t, p.overdue("10.0.0.1:443/redfish/v1/Systems/1", clk.Now()))
	clk.Advance(30 * time.Second)
	assert.True(t, p.overdue("10.0.0.1:443/redfish/v1/Systems/1", clk.Now()))
	_, err = r.locks.Write(ctx, "10.0.0.1:443/redfish/v1/Systems/1", syslock.Record{Holder: "j", Owner: "other"}, 0, 30*time.Second)
	require.NoError(t, err)
	p.watch(ctx, []string{"10.0.0.1:443/redfish/v1/Systems/1"})
	assert.False(t, p.overdue("10.0.0.1:443/redfish/v1/Systems/1", clk.Now()), "taken by another runner meanwhile")
}

// Rendezvous hashing over the live runners' records gives each system to
// exactly one of them, about evenly: replicas that claim together try
// mostly different systems first.
func TestPeersPreferDifferentSystems(t *testing.T) {
	keys := []string{"bmckit/runners/a", "bmckit/runners/b", "bmckit/runners/c"}
	var ps []*peers
	for _, k := range keys {
		ps = append(ps, &peers{key: k, live: keys})
	}
	counts := map[string]int{}
	for i := range 3000 {
		sys := fmt.Sprintf("10.0.%d.%d:443/redfish/v1/Systems/1", i/200, i%200)
		n := 0
		for _, p := range ps {
			if p.mine(sys) {
				n++
				counts[p.key]++
			}
		}
		require.Equal(t, 1, n, "system %s", sys)
	}
	for _, k := range keys {
		assert.InDelta(t, 1000, counts[k], 100, "systems preferred by %s", k)
	}
	alone := &peers{key: keys[0], live: keys[:1]}
	assert.True(t, alone.mine("any"), "a lone runner prefers every system")
}
