package monitor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// driverEnv is a monitor on a fake clock reading real drivers over
// loopback; reads take real time, the schedule fake time.
type driverEnv struct {
	clk   *clock.Fake
	store *memstore.Store
	creds *monitortest.Creds
	logs  *monitortest.LogSink
	m     *monitor.Monitor
}

func newDriverEnv(t *testing.T, d bmc.Dialer, c bmc.Credentials, cfg monitor.Config) *driverEnv {
	t.Helper()
	e := &driverEnv{clk: clock.NewFake(monitortest.T0), store: memstore.New(), creds: monitortest.NewCreds("bmc", c), logs: &monitortest.LogSink{}}
	cfg.Store, cfg.Credentials, cfg.Clock, cfg.Logger = e.store, e.creds, e.clk, e.logs.Logger()
	if cfg.Pool == nil {
		cfg.Dialer = d
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Minute
	}
	cfg.Owner = "replica-a"
	var err error
	e.m, err = monitor.New(cfg)
	require.NoError(t, err)
	monitortest.Start(t, e.m)
	monitortest.Settle(t, e.clk, e.m)
	return e
}

// readOnce moves the clock until the monitor made one more read.
func (e *driverEnv) readOnce(t *testing.T) *monitor.Machine {
	t.Helper()
	n := e.m.Stats().Reads
	for e.m.Stats().Reads == n {
		e.clk.Advance(time.Second)
		monitortest.Settle(t, e.clk, e.m)
	}
	return nil
}

func (e *driverEnv) get(t *testing.T, url string) (*monitor.Machine, conditions.Condition) {
	t.Helper()
	mc := monitortest.Record(t, e.store, e.m, url)
	return mc, monitortest.Contactable(t, mc)
}

func (e *driverEnv) noSecrets(t *testing.T, secrets ...string) {
	t.Helper()
	ms, err := e.m.List(context.Background())
	require.NoError(t, err)
	logs := e.logs.Text()
	for _, s := range secrets {
		assert.NotContains(t, monitortest.MustJSON(t, ms), s)
		assert.NotContains(t, logs, s)
	}
}

func TestRedfishUnreachableAndBack(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret})
	defer srv.Close()
	srv.SetPower("1", "On")
	p := monitortest.NewProxy(t, strings.TrimPrefix(srv.URL(), "http://"))
	url := "redfish+http://" + p.Addr() + "/redfish/v1/Systems/1"
	e := newDriverEnv(t, redfish.NewDialer(redfish.Options{RetryDelay: 10 * time.Millisecond}), srv.Credentials(), monitor.Config{})

	_, err := e.m.Add(context.Background(), url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	mc, c := e.get(t, url)
	require.Equal(t, conditions.True, c.Status, "%+v", c)
	assert.Equal(t, bmc.PowerOn, mc.Status.Power)
	up := mc.Status.LastReadTime

	p.Down()
	e.readOnce(t)
	mc, c = e.get(t, url)
	assert.Equal(t, conditions.False, c.Status)
	assert.Equal(t, monitor.ReasonUnreachable, c.Reason, c.Message)
	assert.Contains(t, c.Message, url)
	assert.Contains(t, c.Message, "connection refused")
	assert.Equal(t, up, mc.Status.LastReadTime)
	assert.Equal(t, bmc.PowerOn, mc.Status.Power, "last known")

	srv.SetPower("1", "Off")
	p.Up()
	e.readOnce(t)
	mc, c = e.get(t, url)
	assert.Equal(t, conditions.True, c.Status, c.Message)
	assert.Equal(t, e.clk.Now(), c.LastTransitionTime.Time)
	assert.Equal(t, bmc.PowerOff, mc.Status.Power)
	assert.Equal(t, int64(1), srv.Logins(), "the session survived the outage")
	e.noSecrets(t, monitortest.Secret)
}

// Each refresh is one GET of the system while the session is open (the
// monitor's own pool keeps it past the interval).
func TestRedfishOneRequestPerRefresh(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret})
	defer srv.Close()
	e := newDriverEnv(t, redfish.NewDialer(redfish.Options{}), srv.Credentials(), monitor.Config{})
	_, err := e.m.Add(context.Background(), srv.Address("1"), "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	srv.ClearRequests()
	before := e.m.Stats().Reads
	monitortest.Advance(t, e.clk, 10*time.Minute, time.Second, e.m)
	reads := e.m.Stats().Reads - before
	require.GreaterOrEqual(t, reads, int64(5))
	reqs := srv.Requests()
	assert.Len(t, reqs, int(reads), "one request per refresh: %v", reqs)
	for _, r := range reqs {
		assert.Equal(t, "GET", r.Method)
		assert.Equal(t, "/redfish/v1/Systems/1", r.Path)
	}
	assert.Equal(t, int64(1), srv.Logins())
}

// Rotation on Redfish: the secret changes to a wrong password (the monitor
// reads at once, closes the old session and reports Unauthorized), then to
// another account (read at once: True on a new session).
func TestRedfishRotatedCredentials(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret, Users: map[string]string{"operator": monitortest.Secret + "-2"}})
	defer srv.Close()
	e := newDriverEnv(t, redfish.NewDialer(redfish.Options{}), srv.Credentials(), monitor.Config{CredentialsCheckInterval: -1})
	url := srv.Address("1")
	_, err := e.m.Add(context.Background(), url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	_, c := e.get(t, url)
	require.Equal(t, conditions.True, c.Status, c.Message)
	require.Equal(t, 1, srv.ActiveSessions())

	wrong := "wrong-" + monitortest.Secret
	e.creds.Set("bmc", bmc.Credentials{Username: "admin", Password: wrong})
	e.m.CredentialsChanged("bmc")
	monitortest.Settle(t, e.clk, e.m)
	mc, c := e.get(t, url)
	assert.Equal(t, conditions.False, c.Status)
	assert.Equal(t, monitor.ReasonUnauthorized, c.Reason, c.Message)
	assert.Contains(t, c.Message, url)
	assert.Equal(t, monitortest.T0, mc.Status.LastReadTime)
	assert.Equal(t, 0, srv.ActiveSessions(), "the old session was logged out")

	e.clk.Advance(5 * time.Second)
	monitortest.Settle(t, e.clk, e.m)
	e.creds.Set("bmc", bmc.Credentials{Username: "operator", Password: monitortest.Secret + "-2"})
	e.m.CredentialsChanged("bmc")
	monitortest.Settle(t, e.clk, e.m)
	mc, c = e.get(t, url)
	assert.Equal(t, conditions.True, c.Status, c.Message)
	assert.Equal(t, monitortest.T0.Add(5*time.Second), mc.Status.LastReadTime, "read at once")
	assert.Equal(t, 1, srv.ActiveSessions())
	assert.Equal(t, int64(2), srv.Logins())
	e.noSecrets(t, monitortest.Secret, wrong)
}

func TestRedfishTLSError(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{Password: monitortest.Secret})
	defer srv.Close()
	e := newDriverEnv(t, redfish.NewDialer(redfish.Options{Retries: -1}), srv.Credentials(), monitor.Config{})
	url := srv.Address("1")
	_, err := e.m.Add(context.Background(), url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	_, c := e.get(t, url)
	assert.Equal(t, conditions.False, c.Status)
	assert.Equal(t, monitor.ReasonTLSError, c.Reason, c.Message)
	assert.Contains(t, c.Message, srv.Endpoint("1").String(), "names the BMC (the address as stored: redfish:// for https)")
}

// A job on a Redfish BMC holds the system while the monitor reads it through
// the Runner's pool: one login in all.
func TestRedfishJobHoldingTheSystemSharesItsSession(t *testing.T) {
	clk := clock.NewFake(monitortest.T0)
	srv := redfishtest.NewServer(redfishtest.Config{Password: monitortest.Secret, PowerDelay: 3 * time.Minute, Clock: clk})
	defer srv.Close()
	store := memstore.New()
	resolver := monitortest.NewCreds("bmc", srv.Credentials())
	runner, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{
		Dialer:      redfish.NewDialer(redfish.Options{}),
		Credentials: resolver,
		Clock:       clk,
		IdleTimeout: 10 * time.Minute,
	},
		Owner: "host-1"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- runner.Start(ctx) }()
	defer func() { cancel(); <-runDone }()
	url := srv.Address("1")
	_, err = runner.Submit(ctx, "power-on", job.Spec{BMC: url, CredentialsRef: "bmc", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(srv.PowerChanges()) == 1 }, 10*time.Second, time.Millisecond)

	m, err := monitor.New(monitor.Config{Store: store, Pool: runner.Pool(), Owner: "host-1", Credentials: resolver, Clock: clk, Interval: 30 * time.Second})
	require.NoError(t, err)
	monitortest.Start(t, m)
	_, err = m.Add(ctx, url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, clk, m)
	monitortest.Advance(t, clk, 2*time.Minute, time.Second, m)
	j, err := runner.Get(ctx, "power-on")
	require.NoError(t, err)
	require.False(t, j.Completed(), "the job still holds the system")
	mc, err := m.Get(ctx, url)
	require.NoError(t, err)
	assert.Equal(t, conditions.True, monitortest.Contactable(t, mc).Status)
	assert.Equal(t, bmc.PowerPoweringOn, mc.Status.Power)
	assert.GreaterOrEqual(t, m.Stats().Reads, int64(3))
	assert.Equal(t, int64(1), srv.Logins(), "the monitor used the job's session")
	assert.Equal(t, 1, srv.ActiveSessions())
}

func newIPMIDialer(t *testing.T) bmc.Dialer {
	d, err := ipmi.NewDialer(ipmi.Options{Timeout: 200 * time.Millisecond, Retries: -1, CipherSuites: []int{3}})
	require.NoError(t, err)
	return d
}

func TestIPMIUnreachableAndBack(t *testing.T) {
	sim := ipmitest.NewServer(t, ipmitest.Options{Password: monitortest.Secret, PoweredOn: true})
	e := newDriverEnv(t, newIPMIDialer(t), sim.Credentials, monitor.Config{ReadTimeout: 3 * time.Second})
	url := sim.URL()
	_, err := e.m.Add(context.Background(), url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	mc, c := e.get(t, url)
	require.Equal(t, conditions.True, c.Status, c.Message)
	assert.Equal(t, bmc.PowerOn, mc.Status.Power)

	sim.SetSilent(true)
	e.readOnce(t)
	mc, c = e.get(t, url)
	assert.Equal(t, conditions.False, c.Status)
	assert.Equal(t, monitor.ReasonUnreachable, c.Reason, c.Message)
	assert.Contains(t, c.Message, url)
	assert.Equal(t, monitortest.T0, mc.Status.LastReadTime)

	sim.SetSilent(false)
	sim.Chassis().SetPoweredOn(false)
	e.readOnce(t)
	mc, c = e.get(t, url)
	assert.Equal(t, conditions.True, c.Status, c.Message)
	assert.Equal(t, bmc.PowerOff, mc.Status.Power)
	e.noSecrets(t, monitortest.Secret)
}

func TestIPMIRotatedCredentials(t *testing.T) {
	sim := ipmitest.NewServer(t, ipmitest.Options{Password: monitortest.Secret})
	cd := monitortest.NewCountingDialer(newIPMIDialer(t))
	e := newDriverEnv(t, cd, sim.Credentials, monitor.Config{CredentialsCheckInterval: -1})
	url := sim.URL()
	_, err := e.m.Add(context.Background(), url, "bmc")
	require.NoError(t, err)
	monitortest.Settle(t, e.clk, e.m)
	_, c := e.get(t, url)
	require.Equal(t, conditions.True, c.Status, c.Message)

	wrong := "wrong-" + monitortest.Secret[:10]
	e.creds.Set("bmc", bmc.Credentials{Username: "admin", Password: wrong})
	e.m.CredentialsChanged("bmc")
	monitortest.Settle(t, e.clk, e.m)
	_, c = e.get(t, url)
	assert.Equal(t, conditions.False, c.Status)
	assert.Equal(t, monitor.ReasonUnauthorized, c.Reason, c.Message)
	_, open, _ := cd.Counts()
	assert.Equal(t, 0, open, "the old session was closed")

	e.creds.Set("bmc", sim.Credentials)
	e.m.CredentialsChanged("bmc")
	monitortest.Settle(t, e.clk, e.m)
	_, c = e.get(t, url)
	assert.Equal(t, conditions.True, c.Status, c.Message)
	dials, open, maxOpen := cd.Counts()
	assert.Equal(t, 2, dials)
	assert.Equal(t, 1, open)
	assert.Equal(t, 1, maxOpen)
	e.noSecrets(t, monitortest.Secret, wrong)
}

// An IPMI job holds the system (a power-on that lands late) while the
// monitor reads every 50ms through the Runner's pool: never two sessions.
// On the wall clock: the simulator's power delay is real time.
func TestIPMIJobHoldingTheSystemSharesItsSession(t *testing.T) {
	sim := ipmitest.NewServer(t, ipmitest.Options{Password: monitortest.Secret, PowerDelay: time.Second})
	cd := monitortest.NewCountingDialer(newIPMIDialer(t))
	store := memstore.New()
	resolver := monitortest.NewCreds("bmc", sim.Credentials)
	runner, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: cd, Credentials: resolver}, Owner: "host-1"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- runner.Start(ctx) }()
	defer func() { cancel(); <-runDone }()
	m, err := monitor.New(monitor.Config{Store: store, Pool: runner.Pool(), Owner: "host-1", Credentials: resolver, Interval: 50 * time.Millisecond, ScanInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	monitortest.Start(t, m)
	_, err = m.Add(ctx, sim.URL(), "bmc")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return m.Stats().Reads > 0 }, 10*time.Second, time.Millisecond)

	_, err = runner.Submit(ctx, "power-on", job.Spec{BMC: sim.URL(), CredentialsRef: "bmc", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
	require.NoError(t, err)
	j, err := runner.Wait(ctx, "power-on")
	require.NoError(t, err)
	require.Equal(t, conditions.ResultSucceeded, j.Status.Result, j.Status.Message)
	assert.GreaterOrEqual(t, m.Stats().Reads, int64(5), "the monitor read while the job ran")
	_, _, maxOpen := cd.Counts()
	assert.Equal(t, 1, maxOpen, "never two sessions at once")
	mc, err := m.Get(ctx, sim.URL())
	require.NoError(t, err)
	assert.Equal(t, conditions.True, monitortest.Contactable(t, mc).Status)
}
