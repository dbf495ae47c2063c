package redfish_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// One request budget per endpoint: sessions under different credentials on
// one endpoint share it, another endpoint has its own, and a request with
// no turn left fails with its ctx's error without reaching the BMC.
func TestRequestBudgetPerEndpoint(t *testing.T) {
	srvA := redfishtest.NewServer(redfishtest.Config{Users: map[string]string{"ops": "ops-secret"}})
	t.Cleanup(srvA.Close)
	srvB := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(srvB.Close)
	opts := testOptions()
	opts.RequestsPerSecond = 0.001 // no refill during the test: the burst is all there is
	opts.RequestBurst = 8
	// Bounds each logout at cleanup, which finds the budget spent too.
	opts.RequestTimeout = 300 * time.Millisecond
	dialer := redfish.NewDialer(opts)
	ctx := context.Background()
	dial := func(srv *redfishtest.Server, creds bmc.Credentials) *redfish.Driver {
		t.Helper()
		d, err := dialer.DialDriver(ctx, srv.Endpoint("1"), creds)
		if err != nil {
			t.Fatalf("dial %s as %s: %v", srv.Address("1"), creds.Username, err)
		}
		t.Cleanup(func() { _ = d.Close(context.Background()) })
		return d
	}

	// Two sessions on A, as admin and as ops: 3 requests each to dial
	// (service root, login, system), one poll each: 8, the whole burst.
	admin := dial(srvA, srvA.Credentials())
	ops := dial(srvA, bmc.Credentials{Username: "ops", Password: "ops-secret"})
	for _, d := range []*redfish.Driver{admin, ops} {
		if _, err := d.PowerState(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(srvA.Requests()); n != 8 {
		t.Fatalf("endpoint A saw %d requests, want 8 (2 dials of 3, 2 polls)", n)
	}
	for _, d := range []*redfish.Driver{admin, ops} {
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := d.PowerState(wctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("poll beyond A's budget: %v, want the ctx's context.DeadlineExceeded", err)
		}
		var oe *bmc.OpError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), "request budget") {
			t.Errorf("error %q: want a *bmc.OpError saying it waited for the request budget", err)
		}
	}
	if n := len(srvA.Requests()); n != 8 {
		t.Fatalf("endpoint A saw %d requests after its budget was spent, want still 8", n)
	}
	if st := admin.Stats(); st.Throttled != 1 || st.ThrottleWait <= 0 || st.ThrottleWait > 5*time.Second {
		t.Errorf("admin session stats %+v: want 1 throttled request that waited until its ctx ended (50ms)", st)
	}

	// Endpoint B, same dialer: a full budget of its own.
	b := dial(srvB, srvB.Credentials())
	for range 5 {
		if _, err := b.PowerState(ctx); err != nil {
			t.Fatalf("endpoint B while A's budget is spent: %v", err)
		}
	}
	if st := b.Stats(); st.Throttled != 0 || st.Requests != 8 {
		t.Errorf("endpoint B stats %+v: want 8 requests, none throttled", st)
	}

	// Without a deadline of its own, the wait ends with RequestTimeout: a
	// transient error naming the budget, not a hang.
	opts.RequestTimeout = 50 * time.Millisecond
	opts.Retries = -1
	opts.RequestBurst = 3
	short := redfish.NewDialer(opts)
	d1, err := short.DialDriver(ctx, srvA.Endpoint("1"), srvA.Credentials())
	if err != nil {
		t.Fatal(err) // a new dialer: a budget of its own, spent by this dial
	}
	t.Cleanup(func() { _ = d1.Close(context.Background()) })
	d2, err := short.DialDriver(ctx, srvA.Endpoint("1"), srvA.Credentials())
	if err == nil {
		_ = d2.Close(ctx)
		t.Fatal("second dial through a spent budget succeeded")
	}
	if !bmc.IsTransient(err) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "request budget") {
		t.Errorf("dial through a spent budget: %v; want a transient timeout naming the request budget", err)
	}
}

// A negative RequestsPerSecond means no budget.
func TestRequestBudgetUnlimited(t *testing.T) {
	opts := testOptions()
	opts.RequestsPerSecond = -1
	_, drv := dialSim(t, redfishtest.Config{}, opts, "1", false)
	for range 100 {
		if _, err := drv.PowerState(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st := drv.Stats(); st.Throttled != 0 {
		t.Errorf("stats %+v: want no throttled request without a budget", st)
	}
}

// fleetResult is what one run of pollFleet measured.
type fleetResult struct {
	detected       int
	lags           []time.Duration // sorted
	overLimit      int64
	peakRate       float64
	requests       int64
	throttled      int64
	throttleWait   time.Duration
	pollErrors     int
	setPowerErrors int
	took           time.Duration
}

func (r fleetResult) lag(q float64) time.Duration {
	if len(r.lags) == 0 {
		return 0
	}
	return r.lags[int(q*float64(len(r.lags)-1))].Round(time.Millisecond)
}

func (r fleetResult) String() string {
	return fmt.Sprintf("detected %d, lag median %s p90 %s max %s; server OverLimit %d, peak %.0f req/s; %d requests, %d waited for the budget (%s in all, %s each on average); %d poll and %d SetPower errors; %s",
		r.detected, r.lag(0.5), r.lag(0.9), r.lag(1), r.overLimit, r.peakRate, r.requests,
		r.throttled, r.throttleWait.Round(time.Millisecond), (r.throttleWait / time.Duration(max(r.throttled, 1))).Round(time.Millisecond),
		r.pollErrors, r.setPowerErrors, r.took.Round(time.Millisecond))
}

// pollFleet powers on n systems behind one simulated endpoint that serves
// limit requests/s and has each wait for its change the way a job does
// (PowerState every 250 ms until it shows On; a refused SetPower is sent
// again 250 ms later), through drivers from one Dialer (system 1 dialed,
// the rest opened on its session). rps is Options.RequestsPerSecond.
// With limitAfterOpen the endpoint's limit starts once the drivers are
// open (without a budget, 200 concurrent OpenSystem reads would be refused).
func pollFleet(t *testing.T, n int, limit, rps float64, limitAfterOpen bool) fleetResult {
	t.Helper()
	const poll = 250 * time.Millisecond
	// Changes land 2-5 s after they were accepted, spread as on real
	// servers (a fixed delay would lock every system's polls in step with
	// its landing and show one lag for all).
	var rngMu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := redfishtest.Config{Systems: n, PowerDelayFunc: func() time.Duration {
		rngMu.Lock()
		defer rngMu.Unlock()
		return 2*time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))
	}}
	if !limitAfterOpen {
		cfg.RequestLimit = limit
	}
	srv := redfishtest.NewServer(cfg)
	t.Cleanup(srv.Close)
	drivers := openAll(t, srv, redfish.Options{RequestsPerSecond: rps}, n)
	if limitAfterOpen {
		srv.SetRequestLimit(limit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seen := make([]time.Time, n)
	var mu sync.Mutex
	var res fleetResult
	start := time.Now()
	var wg sync.WaitGroup
	for i, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := d.SetPower(ctx, bmc.PowerActionOn)
				if err == nil {
					break
				}
				if !bmc.IsTransient(err) || ctx.Err() != nil {
					t.Errorf("system %d: SetPower: %v", i+1, err)
					return
				}
				mu.Lock()
				res.setPowerErrors++
				mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(poll):
				}
			}
			for {
				st, err := d.PowerState(ctx)
				if err == nil && st == bmc.PowerOn {
					seen[i] = time.Now()
					return
				}
				if err != nil {
					if ctx.Err() != nil {
						t.Errorf("system %d: never saw the change: %v", i+1, err)
						return
					}
					mu.Lock()
					res.pollErrors++
					mu.Unlock()
				}
				select {
				case <-ctx.Done():
				case <-time.After(poll):
				}
			}
		}()
	}
	wg.Wait()
	res.took = time.Since(start)
	lands := map[string]time.Time{}
	for _, c := range srv.PowerChanges() {
		if c.Target == "On" {
			lands[c.System] = c.Lands
		}
	}
	for i := range n {
		id := strconv.Itoa(i + 1)
		if seen[i].IsZero() {
			continue
		}
		landed, ok := lands[id]
		if !ok {
			t.Errorf("system %s: seen On but the server accepted no power change", id)
			continue
		}
		res.detected++
		res.lags = append(res.lags, seen[i].Sub(landed))
	}
	slices.Sort(res.lags)
	var st bmc.Stats // the session's: every driver's share
	for _, d := range drivers {
		ds := d.(bmc.StatsReporter).Stats()
		st.Requests += ds.Requests
		st.Throttled += ds.Throttled
		st.ThrottleWait += ds.ThrottleWait
	}
	res.overLimit, res.peakRate = srv.OverLimit(), srv.PeakRate()
	res.requests, res.throttled, res.throttleWait = st.Requests, st.Throttled, st.ThrottleWait
	return res
}

// The case: an endpoint that serves about 130 requests/s and 200
// systems behind it, each waiting for a power change by polling 4 times a
// second (800 requests/s offered). With a budget of 120/s on the dialer no
// request is ever refused and every change is seen, later than on an
// endpoint without a limit (the first run, for comparison); without a
// budget the endpoint is flooded (OverLimit > 0), which shows this test can
// fail.
func TestRequestBudgetManySystemsOneEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: takes about 45 s")
	}
	const n, limit, budget = 200, 130, 120
	free := pollFleet(t, n, 0, -1, false)
	t.Logf("%d systems, endpoint without a limit, no budget: %s", n, free)
	with := pollFleet(t, n, limit, budget, false)
	t.Logf("%d systems, endpoint serving %d/s, budget %d/s: %s", n, limit, budget, with)
	without := pollFleet(t, n, limit, -1, true)
	t.Logf("%d systems, endpoint serving %d/s, no budget: %s", n, limit, without)
	if with.overLimit != 0 {
		t.Errorf("with a budget of %d/s the endpoint refused %d requests over its %d/s; want 0", budget, with.overLimit, limit)
	}
	if with.detected != n {
		t.Errorf("with the budget %d of %d systems' changes were seen", with.detected, n)
	}
	if with.throttled == 0 {
		t.Errorf("with 800 polls/s offered no request waited for the budget of %d/s", budget)
	}
	if without.overLimit == 0 {
		t.Errorf("without a budget the endpoint refused nothing: the test does not load it beyond %d/s", limit)
	}
}
