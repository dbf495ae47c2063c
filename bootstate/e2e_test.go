package bootstate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
)

// bootServer is a host's boot server as a quickstart would write it: its
// own iPXE and Ignition handlers, wrapped by the fetch middleware, and the
// /bootstate handler, on one mux.
func bootServer(t *testing.T, tr *bootstate.Tracker) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	ipxe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := r.PathValue("uuid")
		rec, err := tr.Get(r.Context(), u)
		if err != nil {
			http.Error(w, "no boot scheduled", http.StatusNotFound)
			return
		}
		tok, _ := tr.Token(u, rec.AttemptID)
		q := url.Values{"attempt": {rec.AttemptID}, "token": {tok}}.Encode()
		fmt.Fprintf(w, "#!ipxe\nkernel %s/assets/vmlinuz ignition.config.url=%s/ignition/%s.ign?%s\nboot\n", base, base, u, q)
	})
	ign := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := strings.TrimSuffix(r.PathValue("file"), ".ign")
		q := r.URL.Query()
		// The Ignition config carries what the booted OS posts.
		cfg := map[string]string{"bootstateURL": base + "/bootstate", "systemUUID": u, "attemptID": q.Get("attempt"), "token": q.Get("token")}
		_ = json.NewEncoder(w).Encode(cfg)
	})
	mux.Handle("GET /ipxe/{uuid}", tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched})(ipxe))
	mux.Handle("GET /ignition/{file}", tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIgnitionDataFetched, RequireToken: true})(ign))
	mux.Handle("POST /bootstate", bootstate.NewHandler(tr, bootstate.HandlerConfig{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return base
}

// simulatedServer boots like a real one once powered on: it fetches its
// iPXE script, follows it to the Ignition config, and (unless silent, a
// server whose OS never comes up) posts /bootstate. Upper-case UUIDs in
// the requests stand for firmware that reports them that way.
func simulatedServer(ctx context.Context, base, systemUUID string, silent bool) error {
	get := func(u string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, b)
		}
		return b, nil
	}
	script, err := get(base + "/ipxe/" + strings.ToUpper(systemUUID))
	if err != nil {
		return err
	}
	i := bytes.Index(script, []byte("ignition.config.url="))
	if i < 0 {
		return fmt.Errorf("no ignition URL in script %q", script)
	}
	ignURL, _, _ := strings.Cut(string(script[i+len("ignition.config.url="):]), "\n")
	raw, err := get(ignURL)
	if err != nil {
		return err
	}
	var cfg map[string]string
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	if silent {
		return nil
	}
	body, _ := json.Marshal(map[string]string{"systemUUID": strings.ToUpper(cfg["systemUUID"]), "attemptID": cfg["attemptID"], "token": cfg["token"]})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cfg["bootstateURL"], bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST /bootstate: %d %s", resp.StatusCode, b)
	}
	return nil
}

func TestEndToEndFleetOverLoopback(t *testing.T) {
	timeouts := make(chan bootstate.Record, 1)
	e := newEnv(t, func(c *bootstate.Config) {
		c.DefaultPolicy = bootstate.AllOfSignals(bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched, bootstate.SignalBootStateReceived)
		c.DefaultTimeout = 15 * time.Minute
		c.PollInterval = time.Hour // only in-process notification wakes waiters
		c.OnTimeout = func(_ context.Context, r bootstate.Record) { timeouts <- r }
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = e.tr.Run(ctx) }()
	base := bootServer(t, e.tr)

	const fleet = 8
	const silentIdx = 5
	type outcome struct {
		uuid   string
		rec    bootstate.Record
		err    error
		bootEr error
	}
	outcomes := make(chan outcome, fleet)
	silentFetched := make(chan struct{}) // closed once the silent server fetched both
	var wg sync.WaitGroup
	for i := range fleet {
		u := fmt.Sprintf("4c4c4544-0042-4a10-8031-%012x", 0xb2c04f4e0000+i)
		// A "job": open the attempt before power-on, power on (start the
		// simulated server), wait for boot.
		wg.Add(1)
		go func() {
			defer wg.Done()
			attempt := fmt.Sprintf("job-%d-attempt-1", i)
			if err := e.tr.StartBoot(ctx, u, attempt, 0); err != nil {
				outcomes <- outcome{uuid: u, err: err}
				return
			}
			bootErr := make(chan error, 1)
			go func() {
				err := simulatedServer(ctx, base, u, i == silentIdx)
				if i == silentIdx {
					close(silentFetched)
				}
				bootErr <- err
			}()
			rec, err := e.tr.Wait(ctx, u, attempt)
			outcomes <- outcome{uuid: u, rec: rec, err: err, bootEr: <-bootErr}
		}()
	}
	// Every server but the silent one completes without the clock moving.
	got := map[string]outcome{}
	for len(got) < fleet-1 {
		o := <-outcomes
		got[o.uuid] = o
	}
	if !e.clock.Now().Equal(t0) {
		t.Fatal("clock moved before the fleet booted")
	}
	for u, o := range got {
		if o.err != nil || o.bootEr != nil {
			t.Fatalf("%s: wait %v, boot %v", u, o.err, o.bootEr)
		}
		if o.rec.Result != conditions.ResultSucceeded {
			t.Fatalf("%s: result %q: %s", u, o.rec.Result, o.rec.Message())
		}
		for _, s := range []string{bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched, bootstate.SignalBootStateReceived} {
			if !o.rec.HasSignal(s) {
				t.Fatalf("%s: missing %s", u, s)
			}
		}
	}
	// The silent server fetched its iPXE script and Ignition config (its
	// fetches are answered before its OS "fails to come up"); then it times
	// out once the configured 15 minutes pass.
	select {
	case <-silentFetched:
	case <-time.After(30 * time.Second):
		t.Fatal("the silent server never finished its fetches")
	}
	e.clock.Advance(14 * time.Minute)
	select {
	case r := <-timeouts:
		t.Fatalf("timed out early: %+v", r)
	default:
	}
	var last outcome
	advanceUntil(t, e, time.Minute, func() bool {
		select {
		case last = <-outcomes:
			return true
		default:
			return false
		}
	})
	wg.Wait()
	if last.err != nil || last.bootEr != nil || last.rec.Result != conditions.ResultTimedOut {
		t.Fatalf("silent server: %+v", last)
	}
	if msg := last.rec.Message(); !strings.Contains(msg, "timed out after 15m0s") || !strings.Contains(msg, "received IPXEScriptFetched, IgnitionDataFetched") {
		t.Fatalf("timeout message = %q", msg)
	}
	if r := <-timeouts; r.SystemUUID != last.uuid {
		t.Fatalf("OnTimeout for %s, want %s", r.SystemUUID, last.uuid)
	}
	cancel()
	<-runDone
}
