// Command bootserver is a minimal boot server built on package bootstate:
// it serves iPXE scripts and Ignition configs from its own handlers, wrapped
// by the fetch middleware that records IPXEScriptFetched and
// IgnitionDataFetched, and the /bootstate endpoint a booted server posts to.
// Boot records live in a boltstore file, so a restart loses nothing.
//
// # Trying it
//
// Run it with no arguments:
//
//	go run ./examples/bootserver
//
// It listens on 127.0.0.1:8080, keeps its records in
// $TMPDIR/bmckit-bootserver.db, opens a boot attempt for a demo system and
// prints the three requests a booting server would make, ready to paste:
//
//	curl http://127.0.0.1:8080/ipxe/4C4C4544-0042-4A10-8031-B2C04F4E4A31
//	curl 'http://127.0.0.1:8080/ignition/4c4c4544-0042-4a10-8031-b2c04f4e4a31.ign?attempt=...&token=...'
//	curl -X POST --data '{"systemUUID":"...","attemptID":"...","token":"..."}' http://127.0.0.1:8080/bootstate
//
// and the boot record, which completes after all three:
//
//	curl http://127.0.0.1:8080/status/4c4c4544-0042-4a10-8031-b2c04f4e4a31
//
// Try a wrong token (401), an unknown system UUID (404) or an upper-case
// UUID (accepted). Open another attempt with
//
//	curl -X POST 'http://127.0.0.1:8080/admin/start?uuid=<uuid>&attempt=<id>&timeout=2m'
//
// and watch it time out in the log after two minutes. The /admin and
// /status endpoints are this example's, not the library's; a real host
// protects them.
//
// # Flags
//
//	-listen   address (default 127.0.0.1:8080)
//	-db       boltstore file (default $TMPDIR/bmckit-bootserver.db)
//	-secret-file  file holding the token secret (default: a random secret
//	              per run, so tokens printed by an earlier run stop working)
//	-insecure-no-tokens  accept callbacks without tokens (labs only)
//	-timeout  default boot timeout (default 10m)
//	-demo-uuid  demo system (default 4c4c4544-0042-4a10-8031-b2c04f4e4a31;
//	            empty: none)
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/boltstore"
)

// The tracker is what a job runner's wait-for-boot task takes.
var _ job.BootTracker = (*bootstate.Tracker)(nil)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bootserver:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	dbPath := flag.String("db", filepath.Join(os.TempDir(), "bmckit-bootserver.db"), "boltstore file for boot records")
	secretFile := flag.String("secret-file", "", "file holding the boot-token secret (default: random per run)")
	insecure := flag.Bool("insecure-no-tokens", false, "accept callbacks without tokens (labs only)")
	timeout := flag.Duration("timeout", 10*time.Minute, "default boot timeout")
	demo := flag.String("demo-uuid", "4c4c4544-0042-4a10-8031-b2c04f4e4a31", "system to open a demo boot attempt for (empty: none)")
	flag.Parse()

	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store, err := boltstore.Open(*dbPath, boltstore.Options{})
	if err != nil {
		return err
	}
	defer store.Close(context.Background())

	cfg := bootstate.Config{
		Store:          store,
		Logger:         log,
		DefaultTimeout: *timeout,
		DefaultPolicy: bootstate.AllOfSignals(
			bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched, bootstate.SignalBootStateReceived),
		OnTimeout: func(_ context.Context, r bootstate.Record) {
			// A real host would power-cycle the server and open a new attempt.
			log.Info("boot timed out; a real host would retry now", "systemUUID", r.SystemUUID, "attemptID", r.AttemptID)
		},
	}
	switch {
	case *insecure:
		cfg.InsecureSkipAuth = true
	case *secretFile != "":
		b, err := os.ReadFile(*secretFile)
		if err != nil {
			return err
		}
		cfg.Secret = []byte(strings.TrimSpace(string(b)))
	default:
		cfg.Secret = make([]byte, 32)
		_, _ = rand.Read(cfg.Secret)
	}
	tr, err := bootstate.NewTracker(cfg)
	if err != nil {
		return err
	}
	go func() { _ = tr.Run(ctx) }()

	base := "http://" + *listen
	srv := &http.Server{Addr: *listen, Handler: routes(tr, base), ReadHeaderTimeout: 10 * time.Second}
	if *demo != "" {
		if err := startDemo(ctx, tr, base, *demo); err != nil {
			return err
		}
	}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	log.Info("boot server listening", "addr", *listen, "db", *dbPath, "tokens", tr.AuthEnabled())
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// routes wires the host's own handlers, the fetch middleware and /bootstate.
func routes(tr *bootstate.Tracker, base string) http.Handler {
	mux := http.NewServeMux()
	ipxe := tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched})
	ign := tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIgnitionDataFetched, RequireToken: tr.AuthEnabled()})

	mux.Handle("GET /ipxe/{uuid}", ipxe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, err := tr.Get(r.Context(), r.PathValue("uuid"))
		if err != nil {
			http.Error(w, "no boot scheduled for this system", http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, "#!ipxe\nkernel %s/assets/vmlinuz ignition.config.url=%s console=ttyS0\ninitrd %s/assets/initrd.img\nboot\n",
			base, ignitionURL(tr, base, rec), base)
	})))
	mux.Handle("GET /ignition/{file}", ign(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		u := strings.TrimSuffix(r.PathValue("file"), ".ign")
		// The booted OS posts /bootstate from a unit Ignition writes; the
		// body it posts carries the attempt and token.
		body, _ := json.Marshal(bootstate.Request{SystemUUID: u, AttemptID: q.Get("attempt"), Token: q.Get("token")})
		unit := fmt.Sprintf("[Service]\nType=oneshot\nExecStart=/usr/bin/curl -fsS --retry 10 --retry-all-errors -X POST --data '%s' %s/bootstate\n[Install]\nWantedBy=multi-user.target\n", body, base)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"ignition": map[string]string{"version": "3.4.0"},
			"systemd":  map[string]any{"units": []map[string]any{{"name": "bootstate.service", "enabled": true, "contents": unit}}},
		})
	})))
	mux.Handle("POST /bootstate", bootstate.NewHandler(tr, bootstate.HandlerConfig{}))
	mux.HandleFunc("GET /status/{uuid}", func(w http.ResponseWriter, r *http.Request) {
		rec, err := tr.Get(r.Context(), r.PathValue("uuid"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rec)
	})
	mux.HandleFunc("POST /admin/start", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		d, _ := time.ParseDuration(q.Get("timeout"))
		rec, err := tr.Start(r.Context(), bootstate.StartOptions{SystemUUID: q.Get("uuid"), AttemptID: q.Get("attempt"), Timeout: d})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "attempt %s of %s open until %s\n", rec.AttemptID, rec.SystemUUID, rec.Deadline.Format(time.RFC3339))
	})
	return mux
}

// ignitionURL is where the iPXE script sends the kernel for its config,
// with the attempt and (when enabled) its token.
func ignitionURL(tr *bootstate.Tracker, base string, rec bootstate.Record) string {
	q := url.Values{"attempt": {rec.AttemptID}}
	if tr.AuthEnabled() {
		tok, _ := tr.Token(rec.SystemUUID, rec.AttemptID)
		q.Set("token", tok)
	}
	return fmt.Sprintf("%s/ignition/%s.ign?%s", base, rec.SystemUUID, q.Encode())
}

// startDemo opens an attempt for the demo system and prints how to play
// the booting server with curl. It prints the demo token on purpose, to
// stdout, so you can paste it; the library itself never logs tokens.
func startDemo(ctx context.Context, tr *bootstate.Tracker, base, uuid string) error {
	attempt := fmt.Sprintf("demo-%d", time.Now().Unix())
	rec, err := tr.Start(ctx, bootstate.StartOptions{SystemUUID: uuid, AttemptID: attempt})
	if err != nil {
		return err
	}
	body := bootstate.Request{SystemUUID: rec.SystemUUID, AttemptID: attempt}
	if tr.AuthEnabled() {
		body.Token, _ = tr.Token(rec.SystemUUID, attempt)
	}
	b, _ := json.Marshal(body)
	fmt.Printf(`Demo boot attempt %s of system %s is open until %s. Play the booting server:

  curl %s/ipxe/%s
  curl '%s'
  curl -X POST --data '%s' %s/bootstate
  curl %s/status/%s

`, attempt, rec.SystemUUID, rec.Deadline.Format(time.RFC3339),
		base, strings.ToUpper(rec.SystemUUID), ignitionURL(tr, base, rec), b, base, base, rec.SystemUUID)
	return nil
}
