package membership

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
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

// newView returns the View of runner "me" as a Runner with the default
// settings (KeyPrefix "bmckit/", a 30s lease) makes it.
func newView(store storage.Store, clk clock.Clock) *View {
	return New(Config{Store: store, Prefix: "bmckit/runners/", Owner: "me", Lease: 30 * time.Second,
		ScanInterval: time.Second, Clock: clk, Log: logr.Discard()})
}

// putRecord writes another runner's heartbeat record as its Runner would,
// with expires as its wall clock says.
func putRecord(t *testing.T, s storage.Store, owner string, held int, expires time.Time) {
	t.Helper()
	data, err := json.Marshal(record{Held: held, LeaseMillis: 30000, Expires: expires})
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
func TestViewJudgesLivenessByObservation(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	store := memstore.New()
	v := newView(store, clk)
	v.Start(ctx)
	rec, err := store.Get(ctx, "bmckit/runners/me")
	require.NoError(t, err, "the runner's own record is written at Start")
	assert.JSONEq(t, `{"held":0,"leaseMillis":30000,"expires":"2026-05-01T12:00:30Z"}`, string(rec.Value))
	assert.Equal(t, 33, v.Share(30), "alone: every system and more")

	// b's clock is a year behind ours, c's a year ahead.
	putRecord(t, store, "b", 10, t0.AddDate(-1, 0, 0))
	putRecord(t, store, "c", 10, t0.AddDate(1, 0, 0))
	require.NoError(t, v.list(ctx))
	assert.Equal(t, 11, v.Share(30), "three alive")

	clk.Advance(20 * time.Second)
	putRecord(t, store, "b", 10, t0.AddDate(-1, 0, 0)) // b renews; c does not
	require.NoError(t, v.list(ctx))
	assert.Equal(t, 11, v.Share(30), "c seen unchanged for 20s of a 30s lease: alive")

	clk.Advance(10 * time.Second)
	require.NoError(t, v.list(ctx))
	assert.Equal(t, 16, v.Share(30), "c seen unchanged for a lease: dead; b renewed 10s ago")
	_, err = store.Get(ctx, "bmckit/runners/c")
	assert.ErrorIs(t, err, storage.ErrNotFound, "a dead runner's record is deleted")

	// Giving back: over the share, and only while another has room.
	assert.False(t, v.GiveBack(16, 30), "at the share")
	assert.True(t, v.GiveBack(17, 30), "over it; b holds 10 of its 16")
	putRecord(t, store, "b", 16, t0)
	require.NoError(t, v.list(ctx))
	assert.False(t, v.GiveBack(17, 30), "b has no room either")

	// Another replica deleted this runner's record (it was paused for a
	// lease): the next heartbeat writes it again.
	rec, err = store.Get(ctx, "bmckit/runners/me")
	require.NoError(t, err)
	require.NoError(t, store.Delete(ctx, "bmckit/runners/me", rec.Revision))
	require.True(t, v.Heartbeat())
	v.Beat(ctx, 7, true)
	rec, err = store.Get(ctx, "bmckit/runners/me")
	require.NoError(t, err)
	assert.Contains(t, string(rec.Value), `"held":7`)

	v.Stop(ctx)
	_, err = store.Get(ctx, "bmckit/runners/me")
	assert.ErrorIs(t, err, storage.ErrNotFound, "deleted at Start's return")
}

// A runner restarted with the same Owner takes its own record over, and a
// watched system that nobody takes for a lease becomes overdue: claimed
// whatever the share.
func TestViewRestartAndOverdue(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	store := memstore.New()
	putRecord(t, store, "me", 12, t0.Add(-time.Minute)) // left by the previous process
	v := newView(store, clk)
	v.Start(ctx)
	rec, err := store.Get(ctx, "bmckit/runners/me")
	require.NoError(t, err)
	assert.Contains(t, string(rec.Value), `"held":0`)
	assert.Equal(t, 33, v.Share(30), "its own old record is not another replica")

	const sys = "10.0.0.1:443/redfish/v1/Systems/1"
	v.Watched(sys, true) // no lock: takeable
	assert.Equal(t, []string{sys}, v.TakeFound())
	assert.Empty(t, v.TakeFound(), "taken")
	assert.False(t, v.Overdue(sys, clk.Now()))
	clk.Advance(30 * time.Second)
	v.Watched(sys, true)
	assert.True(t, v.Overdue(sys, clk.Now()), "takeable since the first sighting, a lease ago")
	v.Watched(sys, false)
	assert.False(t, v.Overdue(sys, clk.Now()), "taken by another runner meanwhile")
}

// A heartbeat that comes due while a listing is in flight is written at the
// next claim round; a lone runner lists only with its heartbeats after its
// first lease.
func TestViewBeatCadence(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	v := newView(memstore.New(), clk)
	v.Start(ctx)
	none := func(string) bool { return false }

	launch, _ := v.Tick(clk.Now(), 0, none)
	assert.False(t, launch, "listed at Start")
	clk.Advance(time.Second)
	launch, write := v.Tick(clk.Now(), 0, none)
	require.True(t, launch, "the first lease: every ScanInterval")
	assert.False(t, write)
	assert.False(t, v.Heartbeat(), "a listing is in flight")
	launch, _ = v.Tick(clk.Now(), 0, none)
	assert.False(t, launch, "still in flight")
	v.Beat(ctx, 0, false)
	launch, write = v.Tick(clk.Now(), 0, none)
	assert.True(t, launch && write, "the heartbeat's write, at the next round")
	v.Beat(ctx, 0, true)

	clk.Advance(30 * time.Second) // past the first lease, alone
	launch, _ = v.Tick(clk.Now(), 0, none)
	assert.False(t, launch, "a lone runner lists with its heartbeats")
	clk.Advance(5 * time.Second)
	launch, _ = v.Tick(clk.Now(), 0, none)
	assert.False(t, launch, "until LeaseDuration/3 later")
	assert.True(t, v.Heartbeat())
}

// Rendezvous hashing over the live runners' records gives each system to
// exactly one of them, about evenly: replicas that claim together try
// mostly different systems first.
func TestViewPreferDifferentSystems(t *testing.T) {
	keys := []string{"bmckit/runners/a", "bmckit/runners/b", "bmckit/runners/c"}
	var vs []*View
	for _, k := range keys {
		vs = append(vs, &View{key: k, live: keys})
	}
	counts := map[string]int{}
	for i := range 3000 {
		sys := fmt.Sprintf("10.0.%d.%d:443/redfish/v1/Systems/1", i/200, i%200)
		n := 0
		for _, v := range vs {
			if v.mine(sys) {
				n++
				counts[v.key]++
			}
		}
		require.Equal(t, 1, n, "system %s", sys)
	}
	for _, k := range keys {
		assert.InDelta(t, 1000, counts[k], 100, "systems preferred by %s", k)
	}
	alone := &View{key: keys[0], live: keys[:1]}
	assert.True(t, alone.mine("any"), "a lone runner prefers every system")
}

// Prefer ranks the systems found takeable first (longest first), then the
// hinted ones, then those whose lock was never seen held, then the rest.
func TestViewPreferOrder(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	v := newView(memstore.New(), clk)
	v.Watched("free2", true)
	clk.Advance(time.Second)
	v.Watched("free1", true)
	v.Hint("hinted")
	systems := []string{"held", "never", "hinted", "free1", "free2"}
	v.Prefer(systems, func(sys string) bool { return sys == "held" || sys == "hinted" })
	assert.Equal(t, []string{"free2", "free1", "hinted", "never", "held"}, systems)
	v.ClearHints()
	v.Prefer(systems, func(sys string) bool { return sys == "held" || sys == "hinted" })
	assert.Equal(t, []string{"free2", "free1", "never"}, systems[:3], "no longer hinted: with the rest")
}
