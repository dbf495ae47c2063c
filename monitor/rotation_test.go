package monitor_test

import (
	"context"
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
	"github.com/bmckit/bmckit/storage/memstore"
)

// A machine found between a rotation's change and its promotion (the BMC
// takes only the pending credentials) is Contactable, reason
// RotationInProgress, never Unauthorized; one failed login in all the
// reads (the pending credentials are tried first once they worked), so a
// BMC that locks an account after 3 failed logins does not lock it. Once
// the rotation is promoted, the reason is Contacted again.
func TestRotationInProgressIsContactable(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(monitortest.T0)
	old := bmc.Credentials{Username: "admin", Password: monitortest.Secret}
	next := bmc.Credentials{Username: "admin", Password: monitortest.Secret + "-next"}
	fleet := fake.NewFleet()
	srv, err := fleet.AddNew(fakeURL, fake.Options{Power: bmc.PowerOn, Clock: clk, Username: old.Username, Password: old.Password,
		Accounts: fake.AccountOptions{Policy: bmc.PasswordPolicy{LockoutThreshold: 3}}})
	require.NoError(t, err)
	store := bmc.NewMemoryCredentials(map[string]bmc.Credentials{"rack1": old})
	logs := &monitortest.LogSink{}
	st := memstore.New()
	m, err := monitor.New(monitor.Config{Store: st, Dialer: fleet, Credentials: store, Clock: clk, Logger: logs.Logger(),
		Interval: time.Minute, Owner: "replica-a", CredentialsCheckInterval: -1})
	require.NoError(t, err)
	monitortest.Start(t, m)
	monitortest.Settle(t, clk, m)
	_, err = m.Add(ctx, fakeURL, "rack1")
	require.NoError(t, err)
	monitortest.Settle(t, clk, m)
	require.Equal(t, monitor.ReasonContacted, monitortest.Contactable(t, monitortest.Record(t, st, m, fakeURL)).Reason)

	// A rotation stopped after its change: pending stored, BMC changed.
	require.NoError(t, store.SetPending(ctx, "rack1", next))
	d, err := srv.Dial(ctx, bmc.Endpoint{}, old)
	require.NoError(t, err)
	require.NoError(t, d.(bmc.AccountManager).UpdateAccount(ctx, "1", bmc.AccountUpdate{Password: &next.Password}))
	require.NoError(t, d.Close(ctx))
	srv.ExpireSessions()
	failedBefore := srv.Sessions().FailedLogins

	monitortest.Advance(t, clk, 6*time.Minute, time.Second, m)
	mc := monitortest.Record(t, st, m, fakeURL)
	c := monitortest.Contactable(t, mc)
	assert.Equal(t, conditions.True, c.Status, "%+v", c)
	assert.Equal(t, monitor.ReasonRotationInProgress, c.Reason)
	assert.Contains(t, c.Message, "rotation in progress")
	assert.Less(t, clk.Now().Sub(mc.Status.LastReadTime), 2*time.Minute, "read on schedule")
	assert.Equal(t, 1, srv.Sessions().FailedLogins-failedBefore, "one refused login for all the reads")
	for _, a := range srv.Accounts() {
		assert.False(t, a.Locked)
	}

	require.NoError(t, store.Promote(ctx, "rack1", next))
	m.CredentialsChanged("rack1")
	monitortest.Settle(t, clk, m)
	c = monitortest.Contactable(t, monitortest.Record(t, st, m, fakeURL))
	assert.Equal(t, conditions.True, c.Status)
	assert.Equal(t, monitor.ReasonContacted, c.Reason)
	for _, pw := range []string{old.Password, next.Password} {
		assert.NotContains(t, logs.Text(), pw)
		assert.NotContains(t, monitortest.MustJSON(t, monitortest.Record(t, st, m, fakeURL)), pw)
	}
}
