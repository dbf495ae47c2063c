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
//	-demo-source  address (IP or CIDR) the demo system may fetch and call
//	              back from (default: any)
//	-mode       AllOf or AnyOf over -signals (default AllOf)
//	-signals    signals that count as booted (default
//	            IPXEScriptFetched,IgnitionDataFetched,BootStateReceived)
//	-ipxe-within       the iPXE script must be fetched this long after the
//	                   attempt started (default 0: no stage deadline)
//	-ignition-within   Ignition must be fetched this long after the iPXE
//	                   script (default 0: none)
//	-bootstate-within  the OS must post /bootstate this long after the
//	                   Ignition fetch (default 0: none)
//
// The flags set the tracker's default policy; a job's wait-for-boot task
// brings its own per attempt (task.WaitForBootPolicy). /admin/start takes
// source=<ip or cidr> (repeatable) to bind an attempt to its machine.
//
// # Who gets the token
//
// The iPXE script this server hands out carries the attempt's token (in the
// Ignition URL), and so does the Ignition config (in the unit that posts
// /bootstate). The script is fetched before the machine has any secret, so
// the fetch cannot be authenticated; what keeps the token from other
// machines is address binding: open each attempt with the machine's address
// (from your DHCP lease data, or the static address you assign it) in
// StartOptions.AllowedSources (task.WaitForBootPolicy.AllowedSources for
// jobs). The fetch middleware then answers 403 to any other address before
// the script or config is rendered, and /bootstate refuses callbacks from
// other addresses, so a host on the same network that knows the system UUID
// gets neither the token nor a way to post for that machine. What binding
// does not stop: a host that can spoof or take over the machine's address
// (same L2 segment without DHCP snooping/ARP protection), or anyone on the
// path reading plain HTTP. Serve over HTTPS (iPXE supports it with an
// embedded CA) where that matters. See docs/bootstate.md, "Threat model".
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

// The tracker is what a job runner's wait-for-boot task takes, including
// the optional per-attempt policy and outcome interfaces.
var (
	_ job.BootTracker         = (*bootstate.Tracker)(nil)
	_ job.BootPolicyStarter   = (*bootstate.Tracker)(nil)
	_ job.BootOutcomeReporter = (*bootstate.Tracker)(nil)
)

// policyFlags are the default policy's flags.
type policyFlags struct {
	mode, signals             string
	ipxe, ignition, bootState time.Duration
}

// policy builds the tracker's default policy: the completion signals and
// the stage deadlines, each after the previous stage (iPXE after the
// attempt's start).
func (f policyFlags) policy() (bootstate.Policy, error) {
	p := bootstate.Policy{Mode: bootstate.PolicyMode(f.mode)}
	for s := range strings.SplitSeq(f.signals, ",") {
		if s = strings.TrimSpace(s); s != "" {
			p.Signals = append(p.Signals, s)
		}
	}
	from := bootstate.FromAttemptStart
	for _, d := range []struct {
		signal string
		within time.Duration
	}{{bootstate.SignalIPXEScriptFetched, f.ipxe}, {bootstate.SignalIgnitionDataFetched, f.ignition}, {bootstate.SignalBootStateReceived, f.bootState}} {
		if d.within > 0 {
			p.Deadlines = append(p.Deadlines, bootstate.SignalDeadline{Signal: d.signal, Within: d.within, From: from})
			from = bootstate.FromPreviousSignal
		}
	}
	if err := p.Validate(); err != nil {
		return bootstate.Policy{}, fmt.Errorf("policy flags: %w", err)
	}
	return p, nil
}

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
	demoSource := flag.String("demo-source", "", "IP or CIDR the demo system may fetch and call back from (empty: any)")
	var pf policyFlags
	flag.StringVar(&pf.mode, "mode", "AllOf", "AllOf or AnyOf over -signals")
	flag.StringVar(&pf.signals, "signals", "IPXEScriptFetched,IgnitionDataFetched,BootStateReceived", "signals that count as booted, comma-separated")
	flag.DurationVar(&pf.ipxe, "ipxe-within", 0, "iPXE script due this long after the attempt started (0: no stage deadline)")
	flag.DurationVar(&pf.ignition, "ignition-within", 0, "Ignition config due this long after the iPXE fetch (0: none)")
	flag.DurationVar(&pf.bootState, "bootstate-within", 0, "/bootstate callback due this long after the Ignition fetch (0: none)")
	flag.Parse()
	policy, err := pf.policy()
	if err != nil {
		return err
	}

	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store, err := boltstore.Open(*dbPath, boltstore.Options{})
	if err != nil {
		return err
	}
	defer store.Close()

	cfg := bootstate.Config{
		Store:          store,
		Logger:         log,
		DefaultTimeout: *timeout,
		DefaultPolicy:  policy,
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
		if err := startDemo(ctx, tr, base, *demo, *demoSource); err != nil {
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
		rec, err := tr.Start(r.Context(), bootstate.StartOptions{SystemUUID: q.Get("uuid"), AttemptID: q.Get("attempt"), Timeout: d, AllowedSources: q["source"]})
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
func startDemo(ctx context.Context, tr *bootstate.Tracker, base, uuid, source string) error {
	attempt := fmt.Sprintf("demo-%d", time.Now().Unix())
	opts := bootstate.StartOptions{SystemUUID: uuid, AttemptID: attempt}
	if source != "" {
		opts.AllowedSources = []string{source}
	}
	rec, err := tr.Start(ctx, opts)
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
