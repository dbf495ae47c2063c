package job_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/stagger"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// Power-on staggering with the real Redfish driver over loopback, on the
// real clock: 40 systems on one simulator, at most 5 power-ons per 2 s, two
// Runners (each with its own Limiter) on one memstore, and the simulator
// taking 0–0.8 s per reset request before it acts. Every power-on is timed
// at its grant, its send (bmc.Admit, in the driver's transport), its
// arrival at the simulator, its effect and its call's return. No 2-s window
// may hold more than 5 arrivals or effects; the test logs the send-to-arrival
// and arrival-to-effect times and the busiest window at each point
// (docs/stagger.md, "Limits of the guarantee").
func TestStaggerRedfishAtTheBMC(t *testing.T) {
	const (
		systems  = 40
		limit    = 5
		interval = 2 * time.Second
	)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(27, 1))
	var grants, sends, arrivals, effects, returns []time.Time
	var sendToArrival, arrivalToEffect []time.Duration
	lastSend := map[string]time.Time{}    // system ID -> its last send
	lastArrival := map[string]time.Time{} // system ID -> its last reset's arrival
	const user, pw = "admin", "stagger-pw"
	sim := redfishtest.NewServer(redfishtest.Config{Username: user, Password: pw, Systems: systems,
		OnRequest: func(r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Actions/ComputerSystem.Reset") {
				now := time.Now()
				id := strings.Split(strings.TrimPrefix(r.URL.Path, "/redfish/v1/Systems/"), "/")[0]
				mu.Lock()
				arrivals = append(arrivals, now)
				lastArrival[id] = now
				if s, ok := lastSend[id]; ok {
					sendToArrival = append(sendToArrival, now.Sub(s))
				}
				mu.Unlock()
			}
		},
		RequestDelayFunc: func(method, path string) time.Duration {
			if method != http.MethodPost || !strings.HasSuffix(path, "/Actions/ComputerSystem.Reset") {
				return 0
			}
			mu.Lock()
			defer mu.Unlock()
			return time.Duration(rng.Int64N(int64(800 * time.Millisecond)))
		},
		OnStateChange: func(c redfishtest.StateChange) {
			if c.What == "reset:On" {
				mu.Lock()
				effects = append(effects, c.Time)
				if a, ok := lastArrival[c.System]; ok {
					arrivalToEffect = append(arrivalToEffect, c.Time.Sub(a))
				}
				mu.Unlock()
			}
		},
	})
	t.Cleanup(sim.Close)
	for i := range systems {
		sim.SetPower(fmt.Sprint(i+1), "Off")
	}

	store := memstore.New()
	dialer := &bmc.SchemeDialer{}
	dialer.Register("redfish", redfish.NewDialer(redfish.Options{}))
	var runners []*job.Runner
	for r := range 2 {
		lim, err := stagger.New(stagger.Config{Store: store, Group: func(string) string { return "pdu-1" }, Limit: limit, Interval: interval})
		require.NoError(t, err)
		gate := &timedGate{lim: lim, note: func(kind, system string, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			switch kind {
			case "grant":
				grants = append(grants, at)
			case "send":
				sends = append(sends, at)
				// SystemKey "127.0.0.1:port/redfish/v1/Systems/N"
				lastSend[system[strings.LastIndex(system, "/")+1:]] = at
			case "return":
				returns = append(returns, at)
			}
		}}
		runner, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{
			Dialer:       dialer,
			PowerGate:    gate,
			Credentials:  bmc.StaticCredentials{"lab": {Username: user, Password: pw}},
			PollInterval: 50 * time.Millisecond,
		}, Owner: fmt.Sprintf("replica-%d", r),

			Workers: 16, ScanInterval: 50 * time.Millisecond})
		require.NoError(t, err)
		runners = append(runners, runner)
	}
	addr := strings.Replace(sim.URL(), "http://", "redfish+http://", 1)
	for i := range systems {
		_, err := runners[i%2].Submit(context.Background(), fmt.Sprintf("on-%02d", i), job.Spec{BMC: balURL(addr, i), CredentialsRef: "lab",
			Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, r.Start(ctx)) }()
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	for i := range systems {
		j, err := runners[0].Wait(wctx, fmt.Sprintf("on-%02d", i))
		if assert.NoError(t, err) {
			assert.Equal(t, conditions.ResultSucceeded, j.Status.Result, "%s: %s", j.Name, j.Status.Message)
		}
	}
	wcancel()
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, effects, systems, "one power-on per system")
	busiest := func(ts []time.Time) int {
		ts = append([]time.Time(nil), ts...)
		sort.Slice(ts, func(a, b int) bool { return ts[a].Before(ts[b]) })
		m := 0
		for i := range ts {
			m = max(m, sort.Search(len(ts), func(k int) bool { return !ts[k].Before(ts[i].Add(interval)) })-i)
		}
		return m
	}
	assert.LessOrEqual(t, busiest(arrivals), limit, "arrivals at the BMC")
	assert.LessOrEqual(t, busiest(effects), limit, "effects at the BMC")
	t.Logf("busiest %v window: grants %d, requests sent under slots (the driver's reads included) %d, reset arrivals %d, effects %d, returns %d (limit %d)",
		interval, busiest(grants), busiest(sends), busiest(arrivals), busiest(effects), busiest(returns), limit)
	t.Logf("arrival to effect: %s", spreadOf(arrivalToEffect))
	t.Logf("send to arrival: %s; power-ons first to last: %v", spreadOf(sendToArrival), last(effects).Sub(first(effects)).Round(10*time.Millisecond))
}

func spreadOf(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	ds = append([]time.Duration(nil), ds...)
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	return fmt.Sprintf("n=%d min %v median %v p90 %v max %v", len(ds), ds[0], ds[len(ds)/2], ds[len(ds)*9/10], ds[len(ds)-1])
}

func first(ts []time.Time) time.Time {
	f := ts[0]
	for _, t := range ts {
		if t.Before(f) {
			f = t
		}
	}
	return f
}

func last(ts []time.Time) time.Time {
	l := ts[0]
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// timedGate is a Limiter that notes when each slot was granted, when each
// request under it was sent (a SendHook around the Limiter's) and when the
// call returned.
type timedGate struct {
	lim  *stagger.Limiter
	note func(kind, system string, at time.Time)
}

var _ job.HeldPowerGate = (*timedGate)(nil)

func (g *timedGate) Admit(ctx context.Context, system, jobName string, taskIndex int) (time.Duration, error) {
	return g.lim.Admit(ctx, system, jobName, taskIndex)
}

func (g *timedGate) AdmitHeld(ctx context.Context, system, jobName string, taskIndex int) (context.Context, func(context.Context), time.Duration, error) {
	send, release, w, err := g.lim.AdmitHeld(ctx, system, jobName, taskIndex)
	if err != nil || w > 0 {
		return send, release, w, err
	}
	g.note("grant", system, time.Now())
	inner := bmc.SendHookFrom(send)
	send = bmc.WithSendHook(send, sendNote{inner: inner, note: func() { g.note("send", system, time.Now()) }})
	return send, func(ctx context.Context) {
		g.note("return", system, time.Now())
		release(ctx)
	}, 0, nil
}

type sendNote struct {
	inner bmc.SendHook
	note  func()
}

func (s sendNote) Sending() error {
	if err := s.inner.Sending(); err != nil {
		return err
	}
	s.note()
	return nil
}
