package controller_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/contrib/kubernetes/leaselock"
	"github.com/bmckit/bmckit/contrib/kubernetes/secretcreds"
	"github.com/bmckit/bmckit/syslock"
)

func TestSecretCredentials(t *testing.T) {
	const pw = "creds-Pw-9051"
	c := newClient(t, secret("ok", "admin", pw),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nopass"}, Data: map[string][]byte{"username": []byte("admin")}})
	r := secretcreds.Resolver{Reader: c}
	ctx := context.Background()

	got, err := r.Resolve(ctx, ns+"/ok")
	require.NoError(t, err)
	assert.Equal(t, bmc.Credentials{Username: "admin", Password: pw}, got)

	got, err = r.Resolve(ctx, "")
	require.NoError(t, err, "no reference: a BMC without authentication")
	assert.Equal(t, bmc.Credentials{}, got)

	_, err = r.Resolve(ctx, ns+"/missing")
	require.Error(t, err)
	assert.True(t, bmc.IsTransient(err), "a Secret not (yet) in the cache is retried: %v", err)
	assert.Contains(t, err.Error(), ns+"/missing")

	_, err = r.Resolve(ctx, ns+"/nopass")
	require.Error(t, err)
	assert.False(t, bmc.IsTransient(err), "a Secret without the key fails the task: %v", err)
	assert.Contains(t, err.Error(), `"password"`)

	for _, ref := range []string{"nons", "/x", "x/", "a/b/c"} {
		_, err = r.Resolve(ctx, ref)
		require.Error(t, err, ref)
		assert.False(t, bmc.IsTransient(err), ref)
	}
}

// A Lease held by another job is taken over only after this process saw it
// unchanged for a whole lease by its own clock; a renewal by the holder
// restarts the count; a released Lease is taken at once; Unlock by another
// holder does nothing; and renewals are written at most once per third of
// a lease.
func TestLeaseLockerSemantics(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const dur = time.Minute
	newLocker := func(owner string) *leaselock.Locker {
		l, err := leaselock.New(c, leaselock.Config{Namespace: "bmckit-system", LeaseDuration: dur, Clock: clk, Owner: owner})
		require.NoError(t, err)
		return l
	}
	a, b := newLocker("replica-a"), newLocker("replica-b") // two replicas
	const sys = "10.0.0.5:443/redfish/v1/Systems/1"

	valid, err := a.Lock(ctx, sys, "metal/a")
	require.NoError(t, err)
	assert.Equal(t, dur-dur/6, valid)
	l := mustLease(t, c, sys)
	assert.Equal(t, "metal/a@replica-a", *l.Spec.HolderIdentity, "the job and the replica acting for it")
	assert.Equal(t, int32(60), *l.Spec.LeaseDurationSeconds)
	assert.Equal(t, sys, l.Annotations[leaselock.LeaseSystemAnnotation])
	rv := l.ResourceVersion

	// Renewed within a third of a lease: no write.
	clk.Advance(dur / 6)
	valid, err = a.Lock(ctx, sys, "metal/a")
	require.NoError(t, err)
	assert.Equal(t, dur-dur/6-dur/6, valid)
	assert.Equal(t, rv, mustLease(t, c, sys).ResourceVersion)

	// Another job: busy, and its count starts now.
	_, err = b.Lock(ctx, sys, "metal/b")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy)
	assert.True(t, errors.Is(err, syslock.ErrBusy))
	assert.Equal(t, "metal/a@replica-a", busy.Holder)

	// The same job stepped by another replica (no leader election): busy
	// too, so the two never both act on the system.
	_, err = b.Lock(ctx, sys, "metal/a")
	require.ErrorIs(t, err, syslock.ErrBusy, "another replica stepping the same job")

	// The holder renews (past a third): the count starts again.
	clk.Advance(dur / 3)
	_, err = a.Lock(ctx, sys, "metal/a")
	require.NoError(t, err)
	assert.NotEqual(t, rv, mustLease(t, c, sys).ResourceVersion, "renewed")
	_, err = b.Lock(ctx, sys, "metal/b")
	require.ErrorIs(t, err, syslock.ErrBusy)
	clk.Advance(dur - time.Second)
	_, err = b.Lock(ctx, sys, "metal/b")
	require.ErrorIs(t, err, syslock.ErrBusy, "not yet a whole lease since the renewal was seen")

	// Unlock by someone else changes nothing.
	require.NoError(t, b.Unlock(ctx, sys, "metal/b"))
	assert.Equal(t, "metal/a@replica-a", *mustLease(t, c, sys).Spec.HolderIdentity)

	// Unchanged for a whole lease: b takes it over.
	clk.Advance(time.Second)
	_, err = b.Lock(ctx, sys, "metal/b")
	require.NoError(t, err)
	l = mustLease(t, c, sys)
	assert.Equal(t, "metal/b@replica-b", *l.Spec.HolderIdentity)
	assert.Equal(t, int32(1), *l.Spec.LeaseTransitions)

	// a's job lost it.
	_, err = a.Lock(ctx, sys, "metal/a")
	require.ErrorIs(t, err, syslock.ErrBusy)

	// Released: taken at once.
	require.NoError(t, b.Unlock(ctx, sys, "metal/b"))
	assert.Nil(t, mustLease(t, c, sys).Spec.HolderIdentity)
	_, err = a.Lock(ctx, sys, "metal/a")
	require.NoError(t, err)
	assert.Equal(t, "metal/a@replica-a", *mustLease(t, c, sys).Spec.HolderIdentity)
}

func mustLease(t *testing.T, c client.Client, sys string) *coordinationv1.Lease {
	t.Helper()
	l := lease(t, c, sys)
	require.NotNil(t, l, "no Lease for %s", sys)
	return l
}
