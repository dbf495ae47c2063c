package syslock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
)

// replica is a StoreLocker named owner over store, on clk, with a
// one-minute lease.
func replica(store storage.Store, clk clock.Clock, owner string) *syslock.StoreLocker {
	return syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: clk, Owner: owner})
}

func lockInfo(t *testing.T, store storage.Store) syslock.Info {
	t.Helper()
	info, err := syslock.Read(context.Background(), store, sysA)
	require.NoError(t, err)
	return info
}

// Whoever ends a job releases its lock: replica B unlocks a completed job
// whose lock replica A holds (issue 33: the replica that completed the job,
// or handled its deletion, was not the one whose lease it was, and the
// system stayed locked). B's unlock for any other job changes nothing.
func TestStoreLockerUnlockByJobFromAnyReplica(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	store := memstore.New()
	a, b := replica(store, clk, "replica-a"), replica(store, clk, "replica-b")

	_, err := a.Lock(ctx, sysA, "netboot")
	require.NoError(t, err)
	rev := lockInfo(t, store).Revision

	require.NoError(t, b.Unlock(ctx, sysA, "reimage"), "another job's unlock")
	info := lockInfo(t, store)
	assert.Equal(t, "netboot", info.Holder)
	assert.Equal(t, "replica-a", info.Owner)
	assert.Equal(t, rev, info.Revision, "not even rewritten")

	require.NoError(t, b.Unlock(ctx, sysA, "netboot"), "the job completed; replica-b saw it")
	assert.Empty(t, lockInfo(t, store).Holder, "released, though replica-a's lease was live")
	require.NoError(t, b.Unlock(ctx, sysA, "netboot"), "idempotent")

	// The system is free at once, for either replica, without a lease's wait.
	_, taken, err := b.TakeLock(ctx, sysA, "reimage")
	require.NoError(t, err)
	assert.True(t, taken)
	assert.Equal(t, "replica-b", lockInfo(t, store).Owner)

	// And a's unlock of the job it no longer holds leaves b's lock alone.
	require.NoError(t, a.Unlock(ctx, sysA, "netboot"))
	assert.Equal(t, "reimage", lockInfo(t, store).Holder)
}

// A job of the same name in another namespace (another KeyPrefix) is
// another job: its unlock leaves the lock alone.
func TestStoreLockerUnlockLeavesAnotherNamespace(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	store := memstore.New()
	x := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{Clock: clk, Owner: "replica-a", KeyPrefix: "tenant-x/"})
	y := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{Clock: clk, Owner: "replica-b", KeyPrefix: "tenant-y/"})
	_, err := x.Lock(ctx, sysA, "netboot")
	require.NoError(t, err)
	require.NoError(t, y.Unlock(ctx, sysA, "netboot"))
	info := lockInfo(t, store)
	assert.Equal(t, "netboot", info.Holder)
	assert.Equal(t, "tenant-x/", info.HolderKeyPrefix)

	_, err = y.Lock(ctx, sysA, "netboot")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy)
	assert.False(t, busy.SameJob, "another namespace's job of the same name")
}

// A process restarted with the same Owner (the same pod) takes its job's
// lock back at once, as taken anew (so the Stepper confirms its copy of the
// job before it acts); another job still waits for the lock's lease.
func TestStoreLockerRestartWithSameOwnerReclaimsAtOnce(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	store := memstore.New()
	before := replica(store, clk, "pod-a")
	_, err := before.Lock(ctx, sysA, "netboot")
	require.NoError(t, err)

	clk.Advance(time.Second) // killed; the pod's container restarts
	after := replica(store, clk, "pod-a")
	_, err = after.Lock(ctx, sysA, "reimage")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy, "another job waits: netboot is unfinished")
	assert.False(t, busy.SameJob)
	assert.Equal(t, "pod-a", busy.Owner)

	valid, taken, err := after.TakeLock(ctx, sysA, "netboot")
	require.NoError(t, err, "the same Owner and job: at once")
	assert.True(t, taken, "taken from the previous process, not renewed")
	assert.Equal(t, 50*time.Second, valid)
	rev := lockInfo(t, store).Revision

	// From now on it renews its own live lock.
	clk.Advance(25 * time.Second) // past a third of the lease
	_, taken, err = after.TakeLock(ctx, sysA, "netboot")
	require.NoError(t, err)
	assert.False(t, taken, "a renewal")
	assert.Greater(t, lockInfo(t, store).Revision, rev, "written")
}

// A process with another Owner waits a whole lease by its own clock, and
// its BusyError says who holds the system and until when, and that it is
// the asking job's own lock (another replica acting for it).
func TestStoreLockerOtherOwnerWaitsTheLease(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	aClk := clock.NewFake(t0)
	bClk := clock.NewFake(t0.Add(-time.Hour)) // an hour behind: Until is by b's clock
	a, b := replica(store, aClk, "pod-a"), replica(store, bClk, "pod-b")
	_, err := a.Lock(ctx, sysA, "netboot")
	require.NoError(t, err)

	bClk.Advance(5 * time.Second)
	_, err = b.Lock(ctx, sysA, "netboot")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, sysA, busy.System)
	assert.Equal(t, "netboot", busy.Holder)
	assert.Equal(t, "pod-a", busy.Owner)
	assert.True(t, busy.SameJob, "the same job, acted for by another process")
	until := t0.Add(-time.Hour + 5*time.Second + time.Minute)
	assert.Equal(t, until, busy.Until, "b's first sight plus the lease, by b's clock")
	assert.Equal(t, `system `+sysA+` is held for job "netboot" by another process, "pod-a"; its lease runs out at `+until.Format(time.RFC3339)+` unless renewed`, err.Error())

	_, err = b.Lock(ctx, sysA, "reimage")
	require.ErrorAs(t, err, &busy)
	assert.False(t, busy.SameJob)
	assert.Equal(t, until, busy.Until, "the count runs from the first sight of the revision")
	assert.Equal(t, `system `+sysA+` is held by job "netboot" (process "pod-a"); its lease runs out at `+until.Format(time.RFC3339)+` unless renewed`, err.Error())

	bClk.Advance(time.Minute - time.Nanosecond)
	_, err = b.Lock(ctx, sysA, "netboot")
	require.ErrorIs(t, err, syslock.ErrBusy, "not yet a whole lease")
	bClk.Advance(time.Nanosecond)
	_, taken, err := b.TakeLock(ctx, sysA, "netboot")
	require.NoError(t, err, "unchanged for a whole lease: b continues the job")
	assert.True(t, taken)
	assert.Equal(t, "pod-b", lockInfo(t, store).Owner)
}

// raceStore lets another locker take the system just before the first lock
// write through it, so that write loses its compare-and-swap.
type raceStore struct {
	storage.Store
	before func()
}

func (s *raceStore) Create(ctx context.Context, k string, v []byte) (int64, error) {
	if f := s.before; f != nil {
		s.before = nil
		f()
	}
	return s.Store.Create(ctx, k, v)
}

// A take that loses the compare-and-swap names the winner.
func TestStoreLockerLostRaceNamesTheWinner(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	mem := memstore.New()
	a := replica(mem, clk, "pod-a")
	rs := &raceStore{Store: mem, before: func() {
		_, err := a.Lock(ctx, sysA, "netboot")
		require.NoError(t, err)
	}}
	b := replica(rs, clk, "pod-b")
	_, err := b.Lock(ctx, sysA, "reimage")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, "netboot", busy.Holder)
	assert.Equal(t, "pod-a", busy.Owner)
	assert.Equal(t, t0.Add(time.Minute), busy.Until)
}

// Without an Owner, a StoreLocker names itself $POD_NAME (stable across
// restarts of a pod, no pid or random part), else a name unique to the
// process: never the bare host name, which two processes on one host share.
func TestStoreLockerDefaultOwnerIsStable(t *testing.T) {
	ctx := context.Background()
	t.Setenv("POD_NAME", "bmckit-controller-7d9f-x2x5q")
	store := memstore.New()
	l := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{})
	_, err := l.Lock(ctx, sysA, "netboot")
	require.NoError(t, err)
	assert.Equal(t, "bmckit-controller-7d9f-x2x5q", lockInfo(t, store).Owner)
	assert.Equal(t, "bmckit-controller-7d9f-x2x5q", syslock.DefaultOwner())

	t.Setenv("POD_NAME", "")
	assert.NotEqual(t, syslock.DefaultOwner(), syslock.DefaultOwner(), "unique per call without POD_NAME")
}

func TestBusyErrorMessages(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	for _, c := range []struct {
		err  syslock.BusyError
		want string
	}{
		{syslock.BusyError{System: "s", Holder: "j"}, `system s is held by job "j"`},
		{syslock.BusyError{System: "s", Holder: "j", Owner: "o", Until: at}, `system s is held by job "j" (process "o"); its lease runs out at 2026-01-02T02:04:05Z unless renewed`},
		{syslock.BusyError{System: "s", Holder: "j", Owner: "o", SameJob: true}, `system s is held for job "j" by another process, "o"`},
		{syslock.BusyError{System: "s"}, `system s changed while it was being locked (another writer won the compare-and-swap)`},
	} {
		assert.Equal(t, c.want, c.err.Error())
		assert.ErrorIs(t, &c.err, syslock.ErrBusy)
	}
}
