package syslock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const sysA = "10.1.0.1:443/redfish/v1/Systems/1"

func TestStoreLockerExcludesOtherHolders(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	store := memstore.New()
	l := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: clk})

	d, err := l.Lock(ctx, sysA, "a")
	require.NoError(t, err)
	assert.Equal(t, 50*time.Second, d, "valid for the lease minus a sixth")
	_, err = l.Lock(ctx, sysA, "b")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy)
	assert.True(t, errors.Is(err, syslock.ErrBusy))
	assert.Equal(t, "a", busy.Holder)

	// The holder renews (idempotent); another holder still waits.
	_, err = l.Lock(ctx, sysA, "a")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx, sysA, "b"), "unlocking someone else's lock does nothing")
	_, err = l.Lock(ctx, sysA, "b")
	require.ErrorIs(t, err, syslock.ErrBusy)

	require.NoError(t, l.Unlock(ctx, sysA, "a"))
	_, err = l.Lock(ctx, sysA, "b")
	require.NoError(t, err, "free after the holder unlocked")
	require.NoError(t, l.Unlock(ctx, sysA, "b"))
	require.NoError(t, l.Unlock(ctx, sysA, "b"), "idempotent")
}

// A lock whose holder stopped renewing is taken over only after the taker
// saw it unchanged for a whole lease by its own clock: a taker whose wall
// clock is far ahead of the holder's gains nothing.
func TestStoreLockerExpiryIsObservedNotCompared(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	holderClk := clock.NewFake(t0)
	takerClk := clock.NewFake(t0.Add(time.Hour)) // an hour ahead
	holder := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: holderClk})
	taker := syslock.NewStoreLocker(store, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Clock: takerClk})

	_, err := holder.Lock(ctx, sysA, "a")
	require.NoError(t, err)
	_, err = taker.Lock(ctx, sysA, "b")
	require.ErrorIs(t, err, syslock.ErrBusy, "first sight starts the count")
	takerClk.Advance(59 * time.Second)
	_, err = taker.Lock(ctx, sysA, "b")
	require.ErrorIs(t, err, syslock.ErrBusy)

	// A renewal (a new revision) restarts the taker's count.
	holderClk.Advance(25 * time.Second) // past the holder's fast path (a third of the lease)
	_, err = holder.Lock(ctx, sysA, "a")
	require.NoError(t, err)
	takerClk.Advance(30 * time.Second)
	_, err = taker.Lock(ctx, sysA, "b")
	require.ErrorIs(t, err, syslock.ErrBusy, "renewed 30s ago by the taker's clock")
	takerClk.Advance(time.Minute)
	_, err = taker.Lock(ctx, sysA, "b")
	require.NoError(t, err, "unchanged for a whole lease: taken over")

	// The old holder's next renewal finds it taken.
	holderClk.Advance(time.Minute)
	_, err = holder.Lock(ctx, sysA, "a")
	require.ErrorIs(t, err, syslock.ErrBusy)
}

func TestReadLockSeesStoreLockerRecords(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	sys := "10.0.0.5:443/redfish/v1/Systems/1"

	info, err := syslock.Read(ctx, s, sys)
	require.NoError(t, err)
	assert.Equal(t, syslock.Info{}, info, "no record: free")

	l := syslock.NewStoreLocker(s, syslock.StoreLockerConfig{LeaseDuration: time.Minute, Owner: "replica-a"})
	_, err = l.Lock(ctx, sys, "netboot-1")
	require.NoError(t, err)
	info, err = syslock.Read(ctx, s, sys)
	require.NoError(t, err)
	assert.Equal(t, "netboot-1", info.Holder)
	assert.Equal(t, "replica-a", info.Owner, "the process acting for the job")
	assert.Equal(t, "bmckit/", info.HolderKeyPrefix)
	assert.Equal(t, time.Minute, info.Lease)
	assert.NotZero(t, info.Revision)

	require.NoError(t, l.Unlock(ctx, sys, "netboot-1"))
	info, err = syslock.Read(ctx, s, sys)
	require.NoError(t, err)
	assert.Empty(t, info.Holder)
}
