package monitor_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

const fakeURL = "redfish://10.0.0.1/redfish/v1/Systems/1"

// fakeEnv is one fake BMC (accepting admin/secret) and a monitor on a fake
// clock reading it every minute.
type fakeEnv struct {
	clk   *clock.Fake
	store storage.Store
	fleet *fake.Fleet
	srv   *fake.BMC
	creds *monitortest.Creds
	logs  *monitortest.LogSink
	m     *monitor.Monitor
}

func newFakeEnv(t *testing.T, cfg monitor.Config) *fakeEnv {
	t.Helper()
	return newFakeEnvWith(t, cfg, fake.Options{Power: bmc.PowerOn})
}

// newFakeEnvWith is newFakeEnv with the fake BMC's options (its Clock is
// the env's).
func newFakeEnvWith(t *testing.T, cfg monitor.Config, opts fake.Options) *fakeEnv {
	t.Helper()
	e := &fakeEnv{clk: clock.NewFake(monitortest.T0), store: memstore.New(), fleet: fake.NewFleet(), logs: &monitortest.LogSink{},
		creds: monitortest.NewCreds("rack1", bmc.Credentials{Username: "admin", Password: monitortest.Secret})}
	var err error
	opts.Clock = e.clk
	e.srv, err = e.fleet.AddNew(fakeURL, opts)
	require.NoError(t, err)
	if cfg.Store == nil {
		cfg.Store = e.store
	}
	e.store = cfg.Store
	if cfg.Pool == nil {
		cfg.Dialer = e.fleet
	}
	cfg.Credentials, cfg.Clock, cfg.Logger = e.creds, e.clk, e.logs.Logger()
	if cfg.Interval == 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Owner == "" {
		cfg.Owner = "replica-a"
	}
	e.m, err = monitor.New(cfg)
	require.NoError(t, err)
	monitortest.Start(t, e.m)
	monitortest.Settle(t, e.clk, e.m)
	return e
}

func (e *fakeEnv) add(t *testing.T) {
	t.Helper()
	_, err := e.m.Add(context.Background(), fakeURL, "rack1")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
}

func TestAddReadsAtOnce(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{})
	e.add(t)

	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	c := monitortest.Contactable(t, mc)
	assert.Equal(t, conditions.True, c.Status)
	assert.Equal(t, monitor.ReasonContacted, c.Reason)
	assert.Contains(t, c.Message, fakeURL)
	assert.Equal(t, int64(1), c.ObservedGeneration)
	assert.Equal(t, monitortest.T0, c.LastTransitionTime.Time)
	assert.Equal(t, bmc.PowerOn, mc.Status.Power)
	assert.Equal(t, monitortest.T0, mc.Status.LastReadTime)
	assert.Equal(t, int64(1), mc.Status.ObservedGeneration)
	assert.Equal(t, "10.0.0.1:443/redfish/v1/Systems/1", mc.System)
	assert.Equal(t, "rack1", mc.CredentialsRef)
	assert.Equal(t, "replica-a", mc.Refresh.Owner)
	assert.Equal(t, int64(1), mc.Refresh.Seq)
	// The first interval after an add is spread over [Interval, 2*Interval).
	assert.GreaterOrEqual(t, mc.Refresh.Next.Sub(monitortest.T0), time.Minute)
	assert.Less(t, mc.Refresh.Next.Sub(monitortest.T0), 2*time.Minute)
	assert.Len(t, e.srv.CallsTo(fake.MethodSystemStatus), 1, "one read")

	// The stored JSON: camelCase, no secret.
	raw, err := e.store.Get(context.Background(), e.m.Prefix()+"10.0.0.1:443%2Fredfish%2Fv1%2FSystems%2F1")
	require.NoError(t, err)
	for _, k := range []string{`"bmc":`, `"system":`, `"credentialsRef":"rack1"`, `"generation":1`, `"observedGeneration":1`,
		`"type":"Contactable"`, `"status":"True"`, `"reason":"Contacted"`, `"power":"On"`, `"lastReadTime":`, `"refresh":{"owner":"replica-a","seq":1`, `"next":`} {
		assert.Contains(t, string(raw.Value), k)
	}
	assert.NotContains(t, string(raw.Value), monitortest.Secret)

	// Adding it again changes nothing and reads nothing.
	_, err = e.m.Add(context.Background(), fakeURL, "rack1")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	assert.Len(t, e.srv.CallsTo(fake.MethodSystemStatus), 1)

	// Then once per interval (±10%), on the session opened first.
	monitortest.Advance(t, e.clk, 6*time.Minute, time.Second, e.m)
	calls := e.srv.CallsTo(fake.MethodSystemStatus)
	require.GreaterOrEqual(t, len(calls), 5)
	require.LessOrEqual(t, len(calls), 7)
	for i := 1; i < len(calls); i++ {
		gap := calls[i].Time.Sub(calls[i-1].Time)
		assert.GreaterOrEqual(t, gap, 54*time.Second, "read %d", i)
		assert.LessOrEqual(t, gap, 2*time.Minute, "read %d", i)
	}
	assert.Equal(t, 1, e.srv.Sessions().Logins, "one session for every read")
	mc = monitortest.Record(t, e.store, e.m, fakeURL)
	assert.Equal(t, monitortest.T0, monitortest.Contactable(t, mc).LastTransitionTime.Time, "no flip, no transition")
	assert.Equal(t, calls[len(calls)-1].Time, mc.Status.LastReadTime)
	assert.Equal(t, int64(len(calls)), e.m.Stats().Reads)
}

func TestAddWithAnotherRefReadsAtOnceAndRemoveStops(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{})
	e.add(t)
	e.clk.Advance(10 * time.Second)
	monitortest.Settle(t, e.clk, e.m)
	e.creds.Set("rack2", bmc.Credentials{Username: "admin", Password: monitortest.Secret})
	mc, err := e.m.Add(context.Background(), fakeURL, "rack2")
	require.NoError(t, err)
	assert.Equal(t, int64(2), mc.Generation)
	monitortest.Settle(t, e.clk, e.m)
	assert.Len(t, e.srv.CallsTo(fake.MethodSystemStatus), 2, "read at once after the change")
	mc = monitortest.Record(t, e.store, e.m, fakeURL)
	assert.Equal(t, int64(2), mc.Status.ObservedGeneration)
	assert.Equal(t, int64(2), monitortest.Contactable(t, mc).ObservedGeneration)
	assert.Equal(t, monitortest.T0.Add(10*time.Second), mc.Status.LastReadTime)

	require.NoError(t, e.m.Remove(context.Background(), fakeURL))
	monitortest.Settle(t, e.clk, e.m)
	_, err = e.m.Get(context.Background(), fakeURL)
	assert.ErrorIs(t, err, storage.ErrNotFound)
	monitortest.Advance(t, e.clk, 5*time.Minute, 5*time.Second, e.m)
	assert.Len(t, e.srv.CallsTo(fake.MethodSystemStatus), 2, "no reads after Remove")
	assert.Equal(t, 0, e.m.Stats().Machines)
	assert.ErrorIs(t, e.m.Remove(context.Background(), fakeURL), storage.ErrNotFound)
}

func TestFakeUnreachableAndBack(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{})
	e.add(t)
	var down atomic.Bool
	refuse := func(context.Context, fake.Call) error {
		if down.Load() {
			return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 443},
				Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		}
		return nil
	}
	e.srv.SetHook(fake.MethodDial, refuse)
	e.srv.SetHook(fake.MethodSystemStatus, refuse)

	down.Store(true)
	var firstFail time.Time
	for i := 0; i < 3; i++ { // three failed reads: one transition
		n := len(e.srv.CallsTo(fake.MethodSystemStatus))
		for len(e.srv.CallsTo(fake.MethodSystemStatus)) == n {
			e.clk.Advance(time.Second)
			monitortest.Settle(t, e.clk, e.m)
		}
		if i == 0 {
			firstFail = e.clk.Now()
		}
		mc := monitortest.Record(t, e.store, e.m, fakeURL)
		c := monitortest.Contactable(t, mc)
		assert.Equal(t, conditions.False, c.Status)
		assert.Equal(t, monitor.ReasonUnreachable, c.Reason)
		assert.Contains(t, c.Message, fakeURL)
		assert.Contains(t, c.Message, "connection refused")
		assert.Equal(t, firstFail, c.LastTransitionTime.Time, "moves only on flips")
		assert.Equal(t, bmc.PowerOn, mc.Status.Power, "the last known power state stays")
		assert.Equal(t, monitortest.T0, mc.Status.LastReadTime, "the last successful read")
		assert.Equal(t, e.clk.Now(), mc.Status.LastAttemptTime, "the failed read was attempted now")
	}

	down.Store(false)
	e.srv.SetPower(bmc.PowerOff)
	n := len(e.srv.CallsTo(fake.MethodSystemStatus))
	for len(e.srv.CallsTo(fake.MethodSystemStatus)) == n {
		e.clk.Advance(time.Second)
		monitortest.Settle(t, e.clk, e.m)
	}
	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	c := monitortest.Contactable(t, mc)
	assert.Equal(t, conditions.True, c.Status)
	assert.Equal(t, e.clk.Now(), c.LastTransitionTime.Time)
	assert.Equal(t, bmc.PowerOff, mc.Status.Power)
	assert.Equal(t, e.clk.Now(), mc.Status.LastReadTime)
	assert.Equal(t, e.clk.Now(), mc.Status.LastAttemptTime)
	st := e.m.Stats()
	assert.Equal(t, int64(3), st.Failed)
	assert.NotContains(t, e.logs.Text(), monitortest.Secret)
}

// Rotation where the BMC takes the new password and ends the old sessions
// first: the monitor reports Unauthorized with the old credentials, and once
// the resolver returns the new ones it reads at once (CredentialsChanged)
// and succeeds; the old session is closed.
func TestFakeRotatedCredentials(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{CredentialsCheckInterval: -1})
	e.add(t)
	require.Equal(t, 1, e.srv.Sessions().Open)

	var rotated atomic.Bool
	e.srv.SetHook(fake.MethodDial, func(_ context.Context, c fake.Call) error {
		if rotated.Load() && c.Args[0] != "admin2" {
			return bmc.ErrUnauthorized
		}
		return nil
	})
	rotated.Store(true)
	e.srv.ExpireSessions()

	monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m)
	mc := monitortest.Record(t, e.store, e.m, fakeURL)
	c := monitortest.Contactable(t, mc)
	require.Equal(t, conditions.False, c.Status, "%+v", c)
	assert.Equal(t, monitor.ReasonUnauthorized, c.Reason)
	assert.Contains(t, c.Message, fakeURL)
	assert.Equal(t, 0, e.srv.Sessions().Open, "the expired session was closed")
	reads := len(e.srv.CallsTo(fake.MethodSystemStatus))

	e.creds.Set("rack1", bmc.Credentials{Username: "admin2", Password: monitortest.Secret + "-new"})
	e.m.CredentialsChanged("rack1")
	monitortest.Settle(t, e.clk, e.m)
	mc = monitortest.Record(t, e.store, e.m, fakeURL)
	c = monitortest.Contactable(t, mc)
	assert.Equal(t, conditions.True, c.Status, "%+v", c)
	assert.Equal(t, e.clk.Now(), mc.Status.LastReadTime, "read at once")
	assert.Equal(t, reads+1, len(e.srv.CallsTo(fake.MethodSystemStatus)))
	s := e.srv.Sessions()
	assert.Equal(t, 1, s.Open)
	assert.Equal(t, 1, s.MaxOpen)
	assert.Equal(t, 2, s.Logins)
	assert.NotContains(t, e.logs.Text(), monitortest.Secret)
}

// Rotation where the secret changes while the old session still works: the
// periodic credentials check notices the new hash and reads at once; the
// pool closes the old session before it dials the new one.
func TestFakeCredentialsChangeSeenByThePeriodicCheck(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{Interval: 10 * time.Minute, CredentialsCheckInterval: 30 * time.Second})
	e.add(t)
	e.creds.Set("rack1", bmc.Credentials{Username: "admin", Password: monitortest.Secret + "-new"})
	monitortest.Advance(t, e.clk, 30*time.Second, time.Second, e.m)
	assert.Len(t, e.srv.CallsTo(fake.MethodSystemStatus), 2, "read at once on the check, long before the interval")
	s := e.srv.Sessions()
	assert.Equal(t, 2, s.Logins)
	assert.Equal(t, 1, s.Open)
	assert.Equal(t, 1, s.MaxOpen, "the old session closed before the new one opened")
	// Unchanged credentials: the next checks read nothing.
	monitortest.Advance(t, e.clk, 2*time.Minute, 5*time.Second, e.m)
	assert.Len(t, e.srv.CallsTo(fake.MethodSystemStatus), 2)
}

func TestCredentialsUnresolved(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{})
	_, err := e.m.Add(context.Background(), fakeURL, "missing")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	c := monitortest.Contactable(t, monitortest.Record(t, e.store, e.m, fakeURL))
	assert.Equal(t, conditions.False, c.Status)
	assert.Equal(t, monitor.ReasonCredentialsUnresolved, c.Reason)
	assert.Contains(t, c.Message, `"missing"`)
	assert.Contains(t, c.Message, fakeURL)
	assert.Equal(t, 0, e.srv.Sessions().Logins, "the BMC was not contacted")

	e.creds.Set("missing", bmc.Credentials{Username: "admin", Password: monitortest.Secret})
	monitortest.Advance(t, e.clk, time.Minute, time.Second, e.m) // the periodic check
	assert.Equal(t, conditions.True, monitortest.Contactable(t, monitortest.Record(t, e.store, e.m, fakeURL)).Status)
}

// blockingPowerOn holds every SetPower until release is closed, so a job
// holds its system while the monitor runs.
func TestFakeJobHoldingTheSystemSharesItsSession(t *testing.T) {
	clk := clock.NewFake(monitortest.T0)
	store := memstore.New()
	fleet := fake.NewFleet()
	srv, err := fleet.AddNew(fakeURL, fake.Options{Power: bmc.PowerOff, Clock: clk, PowerTransition: 3 * time.Minute})
	require.NoError(t, err)
	resolver := monitortest.NewCreds("rack1", bmc.Credentials{Username: "admin", Password: monitortest.Secret})
	runner, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fleet, Credentials: resolver, Clock: clk, IdleTimeout: 10 * time.Minute}, Owner: "host-1"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- runner.Start(ctx) }()
	defer func() { cancel(); <-runDone }()

	_, err = runner.Submit(ctx, "power-on", job.Spec{BMC: fakeURL, CredentialsRef: "rack1", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(srv.CallsTo(fake.MethodSetPower)) == 1 }, 10*time.Second, time.Millisecond)

	logs := &monitortest.LogSink{}
	m, err := monitor.New(monitor.Config{Store: store, Pool: runner.Pool(), Owner: "host-1", Credentials: resolver, Clock: clk, Interval: 30 * time.Second, Logger: logs.Logger()})
	require.NoError(t, err)
	monitortest.Start(t, m)
	_, err = m.Add(ctx, fakeURL, "rack1")
	require.NoError(t, err)
	monitortest.Settle(t, clk, m)
	mc := monitortest.Record(t, store, m, fakeURL)
	assert.Equal(t, conditions.True, monitortest.Contactable(t, mc).Status)
	assert.Equal(t, bmc.PowerPoweringOn, mc.Status.Power, "read on the job's session, mid-change")

	// The job polls, the monitor reads every 30s, both on one session.
	monitortest.Advance(t, clk, 2*time.Minute, time.Second, m)
	j, err := runner.Get(ctx, "power-on")
	require.NoError(t, err)
	require.False(t, j.Completed(), "the job still holds the system")
	s := srv.Sessions()
	assert.Equal(t, 1, s.Logins, "one login for the job and the monitor")
	assert.Equal(t, 1, s.MaxOpen)
	assert.GreaterOrEqual(t, m.Stats().Reads, int64(2))
	for _, c := range append(srv.CallsTo(fake.MethodSystemStatus), srv.CallsTo(fake.MethodPowerState)...) {
		assert.Equal(t, 1, c.Session)
	}
}

// A system whose job lock another runner holds is not read (the monitor
// would open a second session next to that job's) until the lock is freed
// or its lease is seen unchanged for a whole lease.
func TestSystemHeldByAnotherRunnerIsSkipped(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{})
	ctx := context.Background()
	locker := syslock.NewStoreLocker(e.store, syslock.StoreLockerConfig{LeaseDuration: 10 * time.Minute, Clock: e.clk})
	ep, err := bmc.ParseEndpoint(fakeURL)
	require.NoError(t, err)
	_, err = locker.Lock(ctx, ep.SystemKey(), "someone-elses-job")
	require.NoError(t, err)

	e.add(t)
	monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m)
	assert.Equal(t, 0, e.srv.Sessions().Logins)
	assert.GreaterOrEqual(t, e.m.Stats().Deferred, int64(2))
	c := monitortest.Contactable(t, monitortest.Record(t, e.store, e.m, fakeURL))
	assert.Equal(t, conditions.Unknown, c.Status)
	assert.Equal(t, monitor.ReasonPending, c.Reason)

	require.NoError(t, locker.Unlock(ctx, ep.SystemKey(), "someone-elses-job"))
	monitortest.Advance(t, e.clk, 31*time.Second, time.Second, e.m)
	assert.Equal(t, conditions.True, monitortest.Contactable(t, monitortest.Record(t, e.store, e.m, fakeURL)).Status)
	assert.Equal(t, 1, e.srv.Sessions().Logins)

	// A lease nobody renews is taken as expired after a whole lease.
	_, err = locker.Lock(ctx, ep.SystemKey(), "a-dead-controllers-job")
	require.NoError(t, err)
	reads := len(e.srv.CallsTo(fake.MethodSystemStatus))
	monitortest.Advance(t, e.clk, 9*time.Minute, 5*time.Second, e.m)
	assert.Equal(t, reads, len(e.srv.CallsTo(fake.MethodSystemStatus)))
	monitortest.Advance(t, e.clk, 3*time.Minute, 5*time.Second, e.m)
	assert.Greater(t, len(e.srv.CallsTo(fake.MethodSystemStatus)), reads)
}

func TestNewValidates(t *testing.T) {
	_, err := monitor.New(monitor.Config{})
	assert.Error(t, err)
	_, err = monitor.New(monitor.Config{Store: memstore.New()})
	assert.Error(t, err)
	m, err := monitor.New(monitor.Config{Store: memstore.New(), Dialer: fake.NewFleet()})
	require.NoError(t, err)
	_, err = m.Add(context.Background(), "http://10.0.0.1", "x")
	assert.Error(t, err)
	_, err = m.Add(context.Background(), "redfish://user:"+monitortest.Secret+"@10.0.0.1", "x")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), monitortest.Secret)
	assert.True(t, errors.Is(m.Start(canceled()), nil))
	assert.Error(t, m.Start(context.Background()), "a second Start")
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// A BMC (or resolver) that echoes the password in an error: the message
// stored and logged has it redacted.
func TestSecretEchoedByTheBMCIsRedacted(t *testing.T) {
	e := newFakeEnv(t, monitor.Config{})
	e.srv.SetHook(fake.MethodDial, func(context.Context, fake.Call) error {
		return bmc.Permanent(errors.New("login failed for password " + monitortest.Secret))
	})
	e.add(t)
	c := monitortest.Contactable(t, monitortest.Record(t, e.store, e.m, fakeURL))
	assert.Equal(t, monitor.ReasonBMCError, c.Reason)
	assert.Contains(t, c.Message, "<redacted>")
	assert.NotContains(t, e.logs.Text(), monitortest.Secret)
	ms, err := e.m.List(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, monitortest.MustJSON(t, ms), monitortest.Secret)
}
