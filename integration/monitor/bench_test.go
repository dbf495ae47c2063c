package monitor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
)

// BenchmarkFleet measures the monitor at fleet scale on a fake clock:
// 10,000 machines (BMCKIT_MONITOR_BENCH_N) at the default interval (3
// minutes), warmed up for two intervals (the adds' immediate reads, then the
// first interval spread over [I, 2I)), measured over the next three. It
// reports the BMC requests per second of simulated time, the CPU of this
// process per refresh (getrusage user+system over the window / reads) and
// the store writes per refresh. Run it alone, without -race, in the
// integration module (it needs the Redfish driver and PostgreSQL):
//
//	cd integration && go test -run '^$' -bench Fleet -benchtime 1x ./monitor/
//
// Targets: fake BMCs (one per machine; "requests" are driver calls: a login,
// a read, a logout), redfishtest endpoints with 10 systems each ("redfish")
// or one ("redfish1", skipped above 5,000 machines), HTTP requests counted
// by the simulators, whose CPU is in this process too.
// Pools: "kept", the monitor's own pool, whose idle timeout exceeds the
// interval, and "idle2m", a pool with the job Runner's default IdleTimeout
// (2 minutes, less than the interval: sessions close between reads).
func BenchmarkFleet(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BMCKIT_MONITOR_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	cases := []struct {
		target, store, pool string
	}{
		{"fake", "memstore", "kept"},
		{"fake", "memstore", "idle2m"},
		{"fake", "boltstore", "kept"},
		{"fake", "postgres", "kept"},
		{"redfish", "memstore", "kept"},
		{"redfish", "memstore", "idle2m"},
		{"redfish1", "memstore", "kept"},
		{"redfish1", "memstore", "idle2m"},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("%s/%s/%s/n=%d", c.target, c.store, c.pool, n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				benchFleet(b, n, c.target, c.store, c.pool)
			}
		})
	}
}

// counter counts fake driver calls: logins, reads and logouts.
type counter struct {
	d                      bmc.Dialer
	logins, reads, logouts atomic.Int64
}

func (c *counter) Dial(ctx context.Context, ep bmc.Endpoint, cr bmc.Credentials) (bmc.Driver, error) {
	c.logins.Add(1)
	d, err := c.d.Dial(ctx, ep, cr)
	if err != nil {
		return nil, err
	}
	return &counted{Driver: d, c: c}, nil
}

func (c *counter) requests() int64 { return c.logins.Load() + c.reads.Load() + c.logouts.Load() }

type counted struct {
	bmc.Driver
	c *counter
}

func (d *counted) PowerState(ctx context.Context) (bmc.PowerState, error) {
	d.c.reads.Add(1)
	return d.Driver.PowerState(ctx)
}

func (d *counted) Close(ctx context.Context) error {
	d.c.logouts.Add(1)
	return d.Driver.Close(ctx)
}

func benchFleet(b *testing.B, n int, target, storeName, poolMode string) {
	ctx := context.Background()
	clk := clock.NewFake(monitortest.T0)
	var store storage.Store
	switch storeName {
	case "memstore":
		store = memstore.New()
	case "boltstore":
		s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		store = s
	case "postgres":
		dsn := pgtest.DSN(b)
		s, err := postgres.Open(ctx, dsn, postgres.Options{Store: sqlstore.Options{Schema: pgtest.Schema(b, dsn)}})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close(ctx)
		store = s
	}

	var dialer bmc.Dialer
	var urls []string
	var requests func() int64
	var logins func() int64
	switch target {
	case "fake":
		fleet := fake.NewFleet()
		for i := 0; i < n; i++ {
			u := fmt.Sprintf("redfish://10.%d.%d.%d/redfish/v1/Systems/1", i/65536, i/256%256, i%256)
			if _, err := fleet.AddNew(u, fake.Options{Power: bmc.PowerOn, CallLogSize: -1}); err != nil {
				b.Fatal(err)
			}
			urls = append(urls, u)
		}
		c := &counter{d: fleet}
		dialer, requests, logins = c, c.requests, c.logins.Load
	case "redfish", "redfish1":
		perEndpoint := 10
		if target == "redfish1" {
			// One system per endpoint: every machine its own BMC and
			// session. Three sockets per machine: run it with N <= 5000.
			if n > 5000 {
				b.Skip("redfish1 needs three sockets per machine: set BMCKIT_MONITOR_BENCH_N <= 5000")
			}
			perEndpoint = 1
		}
		var srvs []*redfishtest.Server
		for i := 0; i < (n+perEndpoint-1)/perEndpoint; i++ {
			srv := redfishtest.NewServer(redfishtest.Config{Systems: perEndpoint})
			defer srv.Close()
			srvs = append(srvs, srv)
			for s := 1; s <= perEndpoint && len(urls) < n; s++ {
				urls = append(urls, srv.Address(strconv.Itoa(s)))
			}
		}
		dialer = redfish.NewDialer(redfish.Options{})
		requests = func() int64 {
			var t int64
			for _, s := range srvs {
				t += int64(len(s.Requests()))
			}
			return t
		}
		logins = func() int64 {
			var t int64
			for _, s := range srvs {
				t += s.Logins()
			}
			return t
		}
	}
	cfg := monitor.Config{Store: store, Credentials: bmc.StaticCredentials{"lab": {Username: "admin", Password: "redfishtest-secret"}},
		Clock: clk, Owner: "bench"}
	if poolMode == "idle2m" {
		cfg.Pool = connpool.New(dialer, 2*time.Minute, clk.Now)
		defer cfg.Pool.Close(ctx)
	} else {
		cfg.Dialer = dialer
	}
	m, err := monitor.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Start(runCtx) }()
	defer func() { cancel(); <-done }()

	waitQuiet(b, clk, m)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, u := range urls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := m.Add(ctx, u, "lab"); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	waitQuiet(b, clk, m)
	interval := monitor.DefaultInterval
	step := time.Second
	for d := time.Duration(0); d < 2*interval; d += step {
		clk.Advance(step)
		waitQuiet(b, clk, m)
	}

	b.ResetTimer()
	st0, req0, log0, cpu0 := m.Stats(), requests(), logins(), cpuTime()
	wall0 := time.Now()
	const window = 3 * monitor.DefaultInterval
	for d := time.Duration(0); d < window; d += step {
		clk.Advance(step)
		waitQuiet(b, clk, m)
	}
	b.StopTimer()
	st1, req1, log1, cpu1 := m.Stats(), requests(), logins(), cpuTime()
	reads := st1.Reads - st0.Reads
	if reads == 0 {
		b.Fatal("no reads")
	}
	if st1.Failed != 0 {
		b.Fatalf("%d reads failed", st1.Failed)
	}
	b.ReportMetric(float64(reads)/window.Seconds(), "refreshes/s")
	b.ReportMetric(float64(req1-req0)/window.Seconds(), "requests/s")
	b.ReportMetric(float64(req1-req0)/float64(reads), "requests/refresh")
	b.ReportMetric(float64(log1-log0)/float64(reads), "logins/refresh")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(reads), "cpu-µs/refresh")
	b.ReportMetric(float64(st1.Writes-st0.Writes)/float64(reads), "writes/refresh")
	b.ReportMetric(time.Since(wall0).Seconds(), "wall-s")
}

// waitQuiet polls, without burning CPU, until the monitor has done all it
// had to do at clk's time. Not monitortest.Settle: at 10,000 machines its
// require.Eventually (a goroutine per poll) would weigh on the measured CPU.
func waitQuiet(b *testing.B, clk *clock.Fake, m *monitor.Monitor) {
	deadline := time.Now().Add(time.Minute)
	for !m.Idle(clk.Now()) {
		if time.Now().After(deadline) {
			b.Fatalf("monitor did not settle at %s", clk.Now())
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
