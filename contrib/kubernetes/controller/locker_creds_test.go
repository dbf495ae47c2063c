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

	// Another job: busy, and its count starts now. The error names the
	// job and the replica, and when the Lease runs out by b's count.
	_, err = b.Lock(ctx, sys, "metal/b")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy)
	assert.True(t, errors.Is(err, syslock.ErrBusy))
	assert.Equal(t, "metal/a", busy.Holder)
	assert.Equal(t, "replica-a", busy.Owner)
	assert.False(t, busy.SameJob)
	assert.Equal(t, clk.Now().Add(dur), busy.Until)

	// The same job stepped by another replica (no leader election): busy
	// too, so the two never both act on the system.
	_, err = b.Lock(ctx, sys, "metal/a")
	require.ErrorAs(t, err, &busy, "another replica stepping the same job")
	assert.True(t, busy.SameJob)
	assert.Equal(t, "replica-a", busy.Owner)

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

	// Unlock for another job changes nothing.
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

func newLeaseLockers(t *testing.T, c client.Client, clk clock.Clock, dur time.Duration, owners ...string) []*leaselock.Locker {
	t.Helper()
	var ls []*leaselock.Locker
	for _, o := range owners {
		l, err := leaselock.New(c, leaselock.Config{Namespace: "bmckit-system", LeaseDuration: dur, Clock: clk, Owner: o})
		require.NoError(t, err)
		ls = append(ls, l)
	}
	return ls
}

// Whoever ends a job releases its Lease: replica B unlocks a job whose
// Lease replica A holds (issue 33: after an API-server outage the replica
// that completed the job, or handled its deletion, was not the one whose
// Lease it was, and the system stayed locked). B's unlock for another job
// does nothing.
func TestLeaseLockerUnlockByJobFromAnyReplica(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ls := newLeaseLockers(t, c, clk, time.Minute, "replica-a", "replica-b")
	a, b := ls[0], ls[1]
	const sys = "10.0.0.5:443/redfish/v1/Systems/1"

	_, err := a.Lock(ctx, sys, "metal/netboot")
	require.NoError(t, err)
	rv := mustLease(t, c, sys).ResourceVersion

	require.NoError(t, b.Unlock(ctx, sys, "metal/reimage"), "another job's unlock")
	l := mustLease(t, c, sys)
	assert.Equal(t, "metal/netboot@replica-a", *l.Spec.HolderIdentity)
	assert.Equal(t, rv, l.ResourceVersion, "not even rewritten")
	require.NoError(t, b.Unlock(ctx, sys, "metal/net"), "a prefix of the job's name is another job")
	assert.Equal(t, rv, mustLease(t, c, sys).ResourceVersion)

	require.NoError(t, b.Unlock(ctx, sys, "metal/netboot"), "the job completed; replica-b saw it")
	assert.Nil(t, mustLease(t, c, sys).Spec.HolderIdentity, "released, though replica-a's Lease was live")
	require.NoError(t, b.Unlock(ctx, sys, "metal/netboot"), "idempotent")

	_, taken, err := b.TakeLock(ctx, sys, "metal/reimage")
	require.NoError(t, err, "free at once")
	assert.True(t, taken)
	require.NoError(t, a.Unlock(ctx, sys, "metal/netboot"), "a's unlock of the job it no longer holds")
	assert.Equal(t, "metal/reimage@replica-b", *mustLease(t, c, sys).Spec.HolderIdentity)
}

// A replica restarted with the same Owner (the same pod) takes its job's
// Lease back at once, as taken anew (the Stepper confirms its copy of the
// job before it acts); another job, and another Owner, wait a whole lease.
func TestLeaseLockerRestartWithSameOwnerReclaimsAtOnce(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const dur = time.Minute
	const sys = "10.0.0.5:443/redfish/v1/Systems/1"
	before := newLeaseLockers(t, c, clk, dur, "pod-a")[0]
	_, err := before.Lock(ctx, sys, "metal/netboot")
	require.NoError(t, err)

	clk.Advance(time.Second) // killed; the pod's container restarts
	ls := newLeaseLockers(t, c, clk, dur, "pod-a", "pod-b")
	after, other := ls[0], ls[1]

	_, err = other.Lock(ctx, sys, "metal/netboot")
	var busy *syslock.BusyError
	require.ErrorAs(t, err, &busy, "another Owner waits for the Lease")
	assert.True(t, busy.SameJob)
	assert.Equal(t, "pod-a", busy.Owner)
	assert.Equal(t, clk.Now().Add(dur), busy.Until)

	_, err = after.Lock(ctx, sys, "metal/reimage")
	require.ErrorAs(t, err, &busy, "another job waits: netboot is unfinished")
	assert.False(t, busy.SameJob)

	valid, taken, err := after.TakeLock(ctx, sys, "metal/netboot")
	require.NoError(t, err, "the same Owner and job: at once")
	assert.True(t, taken, "taken from the previous process, not renewed")
	assert.Equal(t, dur-dur/6, valid)
	l := mustLease(t, c, sys)
	assert.Equal(t, "metal/netboot@pod-a", *l.Spec.HolderIdentity)
	assert.Equal(t, int32(0), *l.Spec.LeaseTransitions, "the same holder identity")
	assert.True(t, clk.Now().Equal(l.Spec.AcquireTime.Time), "acquired anew: %s", l.Spec.AcquireTime)

	clk.Advance(dur / 2) // past a third: renewed, by this process
	_, taken, err = after.TakeLock(ctx, sys, "metal/netboot")
	require.NoError(t, err)
	assert.False(t, taken, "a renewal of its own live Lease")

	// The other Owner's count restarted at the take, and again at the
	// renewal: a whole lease from the renewal's first sight.
	_, err = other.Lock(ctx, sys, "metal/netboot")
	require.ErrorIs(t, err, syslock.ErrBusy)
	clk.Advance(dur - time.Second)
	_, err = other.Lock(ctx, sys, "metal/netboot")
	require.ErrorIs(t, err, syslock.ErrBusy, "not yet a whole lease")
	clk.Advance(time.Second)
	_, taken, err = other.TakeLock(ctx, sys, "metal/netboot")
	require.NoError(t, err, "unchanged for a whole lease: pod-b continues the job")
	assert.True(t, taken)
}

// An Owner with "@" would make holderIdentity ambiguous; the default Owner
// is $POD_NAME (else unique per process) and shorter leases are the default.
func TestLeaseLockerConfig(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	_, err := leaselock.New(c, leaselock.Config{Namespace: "bmckit-system", Owner: "a@b"})
	require.ErrorContains(t, err, `"a@b"`)

	t.Setenv("POD_NAME", "ctl-5c6d-abcde")
	l, err := leaselock.New(c, leaselock.Config{Namespace: "bmckit-system"})
	require.NoError(t, err)
	const sys = "10.0.0.9:443/redfish/v1/Systems/1"
	valid, err := l.Lock(ctx, sys, "metal/netboot")
	require.NoError(t, err)
	assert.InDelta(t, float64(leaselock.DefaultLeaseDuration*5/6), float64(valid), float64(time.Second))
	ls := mustLease(t, c, sys)
	assert.Equal(t, "metal/netboot@ctl-5c6d-abcde", *ls.Spec.HolderIdentity)
	assert.Equal(t, int32(leaselock.DefaultLeaseDuration/time.Second), *ls.Spec.LeaseDurationSeconds)
}
