package redfish_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// openAll dials system 1 of srv and opens systems 2..n on its session,
// concurrently; drivers[i] drives system i+1.
func openAll(t *testing.T, srv *redfishtest.Server, opts redfish.Options, n int) []bmc.Driver {
	t.Helper()
	ctx := context.Background()
	owner, err := redfish.NewDialer(opts).DialDriver(ctx, srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Close(context.Background()) })
	drivers := make([]bmc.Driver, n)
	drivers[0] = owner
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			drivers[i], errs[i] = owner.OpenSystem(ctx, srv.Endpoint(strconv.Itoa(i+1)))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("OpenSystem %d: %v", i+1, err)
		}
	}
	return drivers
}

// barrier holds the first n requests that match until n have arrived, to
// prove they were at the BMC at the same time. It gives up after a minute
// (and the test fails) rather than hang.
type barrier struct {
	n       int64
	count   atomic.Int64
	full    chan struct{}
	gaveUp  atomic.Bool
	matches func(method, path string) bool
}

func newBarrier(n int64, matches func(method, path string) bool) *barrier {
	return &barrier{n: n, full: make(chan struct{}), matches: matches}
}

func (b *barrier) fault(method, path string) redfishtest.Fault {
	if !b.matches(method, path) {
		return redfishtest.FaultNone
	}
	c := b.count.Add(1)
	if c == b.n {
		close(b.full)
	}
	if c <= b.n {
		select {
		case <-b.full:
		case <-time.After(time.Minute):
			b.gaveUp.Store(true)
		}
	}
	return redfishtest.FaultNone
}

func isSystemGET(method, path string) bool {
	return method == "GET" && strings.HasPrefix(path, "/redfish/v1/Systems/") && strings.Count(path, "/") == 4
}

func TestOpenSystemFiftySystemsOneSession(t *testing.T) {
	const n = 50
	srv := redfishtest.NewServer(redfishtest.Config{Systems: n})
	t.Cleanup(srv.Close)
	opts := testOptions()
	opts.MaxConnections = 4
	drivers := openAll(t, srv, opts, n)

	// The first four systems' reads must be at the BMC at once: the
	// systems do not wait for each other's requests.
	b := newBarrier(int64(opts.MaxConnections), isSystemGET)
	srv.SetFaults(0, b.fault)

	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.SetPower(ctx, bmc.PowerActionOn); err != nil {
				errs[i] = err
				return
			}
			if (i+1)%2 == 1 {
				errs[i] = d.SetPower(ctx, bmc.PowerActionOff)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("system %d: %v", i+1, err)
		}
	}
	if b.gaveUp.Load() {
		t.Errorf("%d systems' requests never were at the BMC at once", opts.MaxConnections)
	}
	for i := 1; i <= n; i++ {
		want := "On"
		if i%2 == 1 {
			want = "Off"
		}
		st := srv.System(strconv.Itoa(i))
		if st.Power != want || st.Resets["On"] != 1 || st.Boots != 1 {
			t.Errorf("system %d: %+v; want %s after one On", i, st, want)
		}
	}
	// Each driver counts its own requests (an opened one: all of them on
	// its system's resource); together they are the session's.
	perSystem := map[string]int64{}
	for _, r := range srv.Requests() {
		if rest, ok := strings.CutPrefix(r.Path, "/redfish/v1/Systems/"); ok {
			id, _, _ := strings.Cut(rest, "/")
			perSystem[id]++
		}
	}
	var stats bmc.Stats
	for i, d := range drivers {
		st := d.(bmc.StatsReporter).Stats()
		stats.Requests += st.Requests
		stats.Connections += st.Connections
		stats.Logins += st.Logins
		if i == 0 {
			continue
		}
		if want := perSystem[strconv.Itoa(i+1)]; st.Requests != want || st.Logins != 0 {
			t.Errorf("opened driver %d reports %+v; want its own %d requests and no login", i+1, st, want)
		}
	}
	if owner := drivers[0].(bmc.StatsReporter).Stats(); owner.Requests != perSystem["1"]+2 || owner.Logins != 1 {
		t.Errorf("owner reports %+v; want its system's %d requests, the service root and the login", owner, perSystem["1"])
	}
	if srv.Logins() != 1 || stats.Logins != 1 || srv.ActiveSessions() != 1 {
		t.Errorf("server logins %d, active sessions %d, drivers' stats %+v; want one login for %d systems", srv.Logins(), srv.ActiveSessions(), stats, n)
	}
	if c := srv.Connections(); c > int64(opts.MaxConnections) || stats.Connections != c {
		t.Errorf("server saw %d connections, drivers counted %d; want at most MaxConnections %d", c, stats.Connections, opts.MaxConnections)
	}
	if int(stats.Requests) != len(srv.Requests()) {
		t.Errorf("drivers counted %d requests, server logged %d", stats.Requests, len(srv.Requests()))
	}
}

func TestOpenSystemRefusesOtherServices(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 2})
	t.Cleanup(srv.Close)
	other := redfishtest.NewServer(redfishtest.Config{Systems: 2})
	t.Cleanup(other.Close)
	ctx := context.Background()
	drv := dialOn(t, srv, "1")

	https := srv.Endpoint("2")
	https.Transport = "https"
	for name, ep := range map[string]bmc.Endpoint{
		"other port":      other.Endpoint("2"),
		"other host":      {Protocol: "redfish", Transport: "http", Host: "127.0.0.2", Port: srv.Endpoint("2").Port, Path: "/redfish/v1/Systems/2"},
		"other transport": https,
		"other protocol":  {Protocol: "ipmi", Host: "127.0.0.1", Port: srv.Endpoint("2").Port},
	} {
		_, err := drv.OpenSystem(ctx, ep)
		var oe *bmc.OpError
		if !errors.Is(err, bmc.ErrNotSupported) || !errors.As(err, &oe) || bmc.IsTransient(err) {
			t.Errorf("%s: OpenSystem(%s) = %v; want a permanent OpError wrapping ErrNotSupported", name, ep, err)
		}
	}
	if _, err := drv.OpenSystem(ctx, srv.Endpoint("7")); err == nil || errors.Is(err, bmc.ErrNotSupported) || !strings.Contains(err.Error(), `no system "7"`) {
		t.Errorf("OpenSystem of a system the BMC lacks = %v; want no system", err)
	}
	if _, err := drv.OpenSystem(ctx, srv.Endpoint("")); err == nil || !strings.Contains(err.Error(), "name one") {
		t.Errorf("OpenSystem naming no system among two = %v; want the list", err)
	}
	// By UUID, and with the host spelled in upper case.
	ep := srv.Endpoint(redfishtest.SystemUUID(2))
	ep.Host = strings.ToUpper(ep.Host)
	d2, err := drv.OpenSystem(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.SetPower(ctx, bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	if srv.System("2").Power != "On" || srv.System("1").Power != "Off" || srv.Logins() != 1 {
		t.Fatal("the system opened by UUID did not drive system 2 on the one session")
	}
}

// dialOn dials system id of srv.
func dialOn(t *testing.T, srv *redfishtest.Server, id string) *redfish.Driver {
	t.Helper()
	drv, err := redfish.NewDialer(testOptions()).DialDriver(context.Background(), srv.Endpoint(id), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	return drv
}

func TestOpenSystemClose(t *testing.T) {
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 3})
	t.Cleanup(srv.Close)
	drivers := openAll(t, srv, testOptions(), 3)
	owner, two, three := drivers[0], drivers[1], drivers[2]
	ctx := context.Background()

	// Closing an opened system leaves the session to the others.
	if err := two.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := two.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := two.PowerState(ctx); err == nil || bmc.IsTransient(err) {
		t.Fatalf("PowerState on a closed opened driver = %v, want a permanent error", err)
	}
	for i, d := range []bmc.Driver{owner, three} {
		if _, err := d.PowerState(ctx); err != nil {
			t.Fatalf("driver %d after another system closed: %v", i, err)
		}
	}
	if srv.ActiveSessions() != 1 {
		t.Fatalf("%d active sessions after closing an opened system, want 1", srv.ActiveSessions())
	}
	if _, err := two.(bmc.SystemOpener).OpenSystem(ctx, srv.Endpoint("2")); err == nil {
		t.Fatal("OpenSystem on a closed driver succeeded")
	}
	// An opened driver can open more systems on the session.
	again, err := three.(bmc.SystemOpener).OpenSystem(ctx, srv.Endpoint("2"))
	if err != nil {
		t.Fatal(err)
	}

	// Closing the owner ends the session for all.
	if err := owner.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if srv.ActiveSessions() != 0 {
		t.Fatalf("%d active sessions after the owner closed, want 0 (logged out)", srv.ActiveSessions())
	}
	n := len(srv.Requests())
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, d := range []bmc.Driver{three, again} {
		_, err := d.PowerState(cctx)
		if !errors.Is(err, bmc.ErrSessionExpired) {
			t.Fatalf("PowerState after the owner closed = %v; want an error wrapping ErrSessionExpired", err)
		}
		if err := d.SetPower(cctx, bmc.PowerActionOn); err == nil {
			t.Fatal("SetPower after the owner closed succeeded")
		}
	}
	if cctx.Err() != nil {
		t.Fatal("calls after the owner closed waited for their ctx")
	}
	if got := summary(since(srv, n)); len(got) != 0 {
		t.Fatalf("calls after the owner closed sent %v", got)
	}
	if _, err := three.(bmc.SystemOpener).OpenSystem(ctx, srv.Endpoint("1")); err == nil {
		t.Fatal("OpenSystem after the owner closed succeeded")
	}
	if err := three.Close(ctx); err != nil {
		t.Fatalf("Close of an opened driver after the owner: %v", err)
	}
	if srv.Logins() != 1 {
		t.Fatalf("%d logins, want 1", srv.Logins())
	}
}

func TestOpenSystemSessionExpiryLogsInOnceForAll(t *testing.T) {
	const n = 50
	srv := redfishtest.NewServer(redfishtest.Config{Systems: n})
	t.Cleanup(srv.Close)
	opts := testOptions()
	opts.MaxConnections = 8
	drivers := openAll(t, srv, opts, n)
	srv.ExpireSessions()

	// Eight systems' reads reach the BMC together and all get 401 for the
	// expired session; one of them logs in, the others wait for it.
	b := newBarrier(int64(opts.MaxConnections), isSystemGET)
	srv.SetFaults(0, b.fault)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, d := range drivers {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = d.PowerState(ctx) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("system %d after the session expired: %v", i+1, err)
		}
	}
	if b.gaveUp.Load() {
		t.Error("the systems' reads never were at the BMC at once")
	}
	rejected := 0
	for _, r := range srv.Requests() {
		if r.Status == 401 {
			rejected++
		}
	}
	if rejected < opts.MaxConnections {
		t.Errorf("%d requests were rejected with 401, want at least %d", rejected, opts.MaxConnections)
	}
	if got := srv.Logins(); got != 2 {
		t.Fatalf("server logins = %d, want 2 (one re-login for all %d systems)", got, n)
	}
	var logins int64
	for _, d := range drivers {
		logins += d.(bmc.StatsReporter).Stats().Logins
	}
	if logins != 2 {
		t.Fatalf("the drivers' Stats().Logins add up to %d, want 2 (the re-login counts toward the driver that made it)", logins)
	}
	if srv.ActiveSessions() != 1 {
		t.Fatalf("%d active sessions, want 1", srv.ActiveSessions())
	}
}
