// Command bootstate is the load generator behind the boot-state numbers in
// docs/benchmarks.md. In one run it measures, with the same client:
//
//   - bare: a bare net/http handler that reads the body and answers a small
//     JSON 200 (the ceiling of the HTTP stack on this machine);
//   - memstore and boltstore, first callbacks: every request is the first
//     BootStateReceived of its own system (token checked, record written
//     with compare-and-swap before the 200);
//   - memstore and boltstore, repeats: the same callbacks again, which are
//     idempotent and write nothing.
//
// Each server runs in this process on 127.0.0.1 with keep-alive
// connections; the generator and the server share the machine's cores.
//
//	go run ./bench/bootstate -n 10000 -c 32
//
// With -serve bare|memstore|boltstore it only serves that handler (after
// registering -n systems), writes one authenticated callback body per
// system, one per line, to -bodies, prints "ready <addr>" and serves until
// interrupted, so an external load generator can drive it: wrk.sh runs wrk
// with callbacks.lua against each in turn.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
)

var secret = []byte("bench-secret-0123456789abcdef")

func main() {
	n := flag.Int("n", 10000, "requests per measurement (and systems registered per store)")
	c := flag.Int("c", 32, "concurrent clients")
	dir := flag.String("dir", os.TempDir(), "directory for the boltstore file")
	serveMode := flag.String("serve", "", "serve only this handler (bare, memstore, boltstore) for an external load generator")
	bodiesFile := flag.String("bodies", filepath.Join(os.TempDir(), "bmckit-bench-bodies.txt"), "with -serve: where to write the request bodies")
	flag.Parse()
	var err error
	if *serveMode != "" {
		err = serve(*serveMode, *n, *c, *dir, *bodiesFile)
	} else {
		err = run(*n, *c, *dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(n, c int, dir string) error {
	ctx := context.Background()
	fmt.Printf("requests per row: %d, concurrent clients: %d, GOMAXPROCS cores shared by server and client\n\n", n, c)
	fmt.Printf("| %-34s | %10s | %9s | %9s | %9s |\n", "server", "req/s", "p50", "p99", "max")
	fmt.Printf("|%s|%s|%s|%s|%s|\n", dash(36), dash(12), dash(11), dash(11), dash(11))

	bodies := makeBodies(n)
	if err := measure("bare net/http handler", bareHandler, bodies, c); err != nil {
		return err
	}

	path := filepath.Join(dir, fmt.Sprintf("bmckit-bench-%d.db", os.Getpid()))
	defer os.Remove(path)
	bolt, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return err
	}
	defer bolt.Close()
	for _, s := range []struct {
		name  string
		store storage.Store
	}{{"memstore", memstore.New()}, {"boltstore", bolt}} {
		tr, err := bootstate.NewTracker(bootstate.Config{Store: s.store, Secret: secret})
		if err != nil {
			return err
		}
		if err := register(ctx, tr, n, c); err != nil {
			return err
		}
		h := bootstate.NewHandler(tr, bootstate.HandlerConfig{})
		if err := measure(s.name+", first callbacks (write)", h, bodies, c); err != nil {
			return err
		}
		if err := measure(s.name+", repeats (no write)", h, bodies, c); err != nil {
			return err
		}
	}
	return nil
}

// serve registers n systems on the chosen store and serves its handler on
// 127.0.0.1 until SIGINT or SIGTERM.
func serve(mode string, n, c int, dir, bodiesFile string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var h http.Handler
	switch mode {
	case "bare":
		h = bareHandler
	case "memstore", "boltstore":
		var s storage.Store = memstore.New()
		if mode == "boltstore" {
			path := filepath.Join(dir, fmt.Sprintf("bmckit-bench-%d.db", os.Getpid()))
			defer os.Remove(path)
			b, err := boltstore.Open(path, boltstore.Options{})
			if err != nil {
				return err
			}
			defer b.Close()
			s = b
		}
		tr, err := bootstate.NewTracker(bootstate.Config{Store: s, Secret: secret})
		if err != nil {
			return err
		}
		if err := register(ctx, tr, n, c); err != nil {
			return err
		}
		h = bootstate.NewHandler(tr, bootstate.HandlerConfig{})
	default:
		return fmt.Errorf("-serve %q: want bare, memstore or boltstore", mode)
	}
	var buf bytes.Buffer
	for _, b := range makeBodies(n) {
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(bodiesFile, buf.Bytes(), 0o600); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	fmt.Println("ready", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// bareHandler is the ceiling: read the body, answer a small JSON 200.
var bareHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
})

func dash(k int) string { return string(bytes.Repeat([]byte("-"), k)) }

func uuidOf(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// makeBodies builds one authenticated callback per system.
func makeBodies(n int) [][]byte {
	tr, _ := bootstate.NewTracker(bootstate.Config{Store: memstore.New(), Secret: secret})
	out := make([][]byte, n)
	for i := range out {
		tok, _ := tr.Token(uuidOf(i), "attempt-1")
		out[i], _ = json.Marshal(bootstate.Request{SystemUUID: uuidOf(i), AttemptID: "attempt-1", Token: tok})
	}
	return out
}

// register opens an attempt for every system, c at a time.
func register(ctx context.Context, tr *bootstate.Tracker, n, c int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c)
	for range c {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := tr.StartBoot(ctx, uuidOf(i), "attempt-1", time.Hour); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// measure serves h on loopback and posts every body once from c clients.
func measure(name string, h http.Handler, bodies [][]byte, c int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/bootstate"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}}
	defer client.CloseIdleConnections()

	var next atomic.Int64
	lat := make([][]time.Duration, c)
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := range c {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(bodies); i = int(next.Add(1) - 1) {
				t := time.Now()
				resp, err := client.Post(url, "application/json", bytes.NewReader(bodies[i]))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				lat[w] = append(lat[w], time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%s: %d requests failed, first: %v", name, f, firstErr.Load())
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[int(p*float64(len(all)-1))] }
	fmt.Printf("| %-34s | %10.0f | %9s | %9s | %9s |\n", name, float64(len(all))/elapsed.Seconds(),
		q(0.50).Round(time.Microsecond), q(0.99).Round(time.Microsecond), all[len(all)-1].Round(time.Microsecond))
	return nil
}
