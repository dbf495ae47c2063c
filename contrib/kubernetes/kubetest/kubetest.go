// Package kubetest starts a real kube-apiserver and etcd for tests, as
// controller-runtime's envtest does (it uses envtest): certificates, an admin
// client, ready checks, CRDs installed, and a clean stop. The binaries come
// from KUBEBUILDER_ASSETS. Get them the way kubebuilder projects do, with
// setup-envtest, where the machine reaches the internet:
//
//	go install sigs.k8s.io/controller-runtime/tools/setup-envtest@release-0.25
//	export KUBEBUILDER_ASSETS="$(setup-envtest use 1.37.x -p path)"
//
// Offline (only a Go module proxy, as in this repository's CI),
// scripts/kube-binaries.sh builds both from their published Go modules
// (about 20-30 minutes once, then cached) and prints the directory.
//
// Without KUBEBUILDER_ASSETS a test skips, or fails when CI=true (CI must run
// the real-API-server tests, not skip them).
//
//	var apiServer = kubetest.Shared{Options: kubetest.Options{CRDDirectoryPaths: []string{"../config/crd"}}}
//
//	func TestMain(m *testing.M) { code := m.Run(); apiServer.Stop(); os.Exit(code) }
//
//	func TestSomething(t *testing.T) {
//		env := apiServer.Get(t) // started on first use, shared by the package's tests
//		...
//	}
//
// Stop controllers (managers) before the API server: it waits up to 60 s for
// open watches when it stops.
//
// [Env.RestartAPIServer] kills kube-apiserver with SIGKILL and starts it again
// on the same etcd, address, port and certificates, so that clients
// reconnect by themselves (an API server that crashed or lost its node):
//
//	outage, err := env.RestartAPIServer(30 * time.Second) // down 30 s, then until ready
package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv is the environment variable naming the directory that holds
// kube-apiserver and etcd.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Options configures an API server.
type Options struct {
	// CRDDirectoryPaths are directories (or files) of CRD YAML to install;
	// a missing path is an error.
	CRDDirectoryPaths []string
	// Scheme is the admin client's scheme (and envtest's). Defaults to
	// client-go's scheme.
	Scheme *runtime.Scheme
}

// Env is a running API server.
type Env struct {
	// Config is an admin's rest.Config for it.
	Config *rest.Config
	// Client is an admin client with Options.Scheme (no cache).
	Client client.Client
	// Kubeconfig is the path of a kubeconfig file for it (for a
	// controller started as another process).
	Kubeconfig string

	env *envtest.Environment
	dir string

	restartMu sync.Mutex // one kill or start at a time
	certDir   string     // the API server's directory, kept across restarts (removed by Stop)
	killedAt  time.Time  // when KillAPIServer killed it; zero while it runs
}

// Available reports whether the binaries are there, and why not.
func Available() (dir string, err error) {
	dir = os.Getenv(AssetsEnv)
	if dir == "" {
		return "", fmt.Errorf("%s is not set: no kube-apiserver and etcd to test against (export %s=\"$(bash scripts/kube-binaries.sh)\")", AssetsEnv, AssetsEnv)
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%s=%s has no %s: %w", AssetsEnv, dir, b, err)
		}
	}
	return dir, nil
}

// unavailable skips t, or fails it when CI=true.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: the real-API-server tests must run: %v", err)
	}
	t.Skip(err)
}

// Start starts etcd and kube-apiserver, installs the CRDs and returns the
// running server; it is stopped when t ends. Without the binaries t skips
// (fails under CI=true).
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	if _, err := Available(); err != nil {
		unavailable(t, err)
	}
	e, err := start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop() })
	return e
}

func start(opts Options) (*Env, error) {
	dir, err := Available()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: dir,
		Scheme:                opts.Scheme,
	}
	// A loopback-only host has no address for the kubernetes Service's
	// endpoints: without this the API server retries reconciling them.
	env.ControlPlane.GetAPIServer().Configure().Append("endpoint-reconciler-type", "none")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("kubetest: starting etcd and kube-apiserver from %s: %w", dir, err)
	}
	e := &Env{Config: cfg, env: env}
	fail := func(err error) (*Env, error) {
		e.Stop()
		return nil, err
	}
	copts := client.Options{}
	if opts.Scheme != nil {
		copts.Scheme = opts.Scheme
	}
	if e.Client, err = client.New(cfg, copts); err != nil {
		return fail(fmt.Errorf("kubetest: admin client: %w", err))
	}
	if e.dir, err = os.MkdirTemp("", "kubetest-"); err != nil {
		return fail(err)
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, env.KubeConfig, 0o600); err != nil {
		return fail(err)
	}
	return e, nil
}

// Stop stops the API server and etcd and removes their files. Stop the
// controllers first.
func (e *Env) Stop() {
	if e.env != nil {
		_ = e.env.Stop()
		e.env = nil
	}
	if e.certDir != "" {
		// A restarted API server's directory is no longer envtest's to
		// remove (see StartAPIServer).
		_ = os.RemoveAll(e.certDir)
		e.certDir = ""
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
		e.dir = ""
	}
}

// Shared is one API server for all tests of a package, started by the
// first Get and stopped by Stop (call it from TestMain after m.Run).
type Shared struct {
	Options Options

	once sync.Once
	env  *Env
	err  error
}

// Get returns the shared API server, starting it on first use. Under
// -short, or without the binaries, t skips (without the binaries it fails
// under CI=true); a failed start fails t.
func (s *Shared) Get(t testing.TB) *Env {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no real API server")
	}
	if _, err := Available(); err != nil {
		unavailable(t, err)
	}
	s.once.Do(func() { s.env, s.err = start(s.Options) })
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.env
}

// namespaces numbers the namespaces Env.Namespace creates in this process.
var namespaces atomic.Int64

// Namespace creates a namespace of t's own (named after the test, with a
// number that keeps it unique in the process) and returns its name.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = fmt.Sprintf("%s-%d", strings.Trim(name, "-"), namespaces.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// Stop stops the shared API server, if it was started.
func (s *Shared) Stop() {
	if s.env != nil {
		s.env.Stop()
	}
}

// Calls counts the requests a client sends to the API server, by verb and
// resource ("GET leases", "PATCH bmcjobs/status", "PUT leases"). Wrap a
// rest.Config with [Calls.Config].
type Calls struct {
	mu sync.Mutex
	n  map[string]int
}

// Config returns a copy of cfg whose requests are counted.
func (c *Calls) Config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			c.add(Key(r))
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Key is the counting key of a request: its method and resource, with
// "/<subresource>", and " watch" for a watch.
func Key(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/<group>/<version>/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return r.Method + " " + r.URL.Path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	res := ""
	switch len(parts) {
	case 0:
		res = "(discovery)"
	case 1, 2:
		res = parts[0]
	default:
		res = parts[0] + "/" + parts[2]
	}
	k := r.Method + " " + res
	if r.URL.Query().Get("watch") == "true" {
		k += " watch"
	}
	return k
}

func (c *Calls) add(k string) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
	c.mu.Unlock()
}

// Snapshot returns the counts so far.
func (c *Calls) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// Since returns the counts added after an earlier snapshot (zeros left
// out).
func (c *Calls) Since(before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range c.Snapshot() {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Format writes counts as "KEY=N" sorted by key.
func Format(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", k, counts[k])
	}
	return b.String()
}

// Killing and restarting the API server.
//
// envtest's APIServer.Stop is graceful (SIGTERM, then the API server waits
// up to 60 s for open watches) and removes the API server's directory, so a
// Start after it serves a new CA that no existing client trusts. An API
// server that crashes, is OOM-killed or loses its node does neither: its
// connections are cut at once, and it comes back on the same address with
// the same certificates. KillAPIServer and StartAPIServer do that: SIGKILL
// (the process found as this process's child kube-apiserver serving the
// Env's port), then envtest's Start on the same directory, which keeps the
// serving certificate, the client CA, the service-account keys and the
// port. etcd keeps running, so every object survives. Clients (the admin
// client, a controller's manager, a kubeconfig in another process)
// reconnect by themselves.

// RestartTimeout bounds how long StartAPIServer waits for the restarted API
// server to be ready (/readyz).
const RestartTimeout = 2 * time.Minute

// KillAPIServer kills kube-apiserver with SIGKILL (etcd keeps running) and
// returns once its port refuses connections. Every request and watch in
// flight fails with a broken connection, and new ones are refused until
// StartAPIServer.
func (e *Env) KillAPIServer() error {
	e.restartMu.Lock()
	defer e.restartMu.Unlock()
	if e.env == nil {
		return errors.New("kubetest: the API server is stopped")
	}
	if !e.killedAt.IsZero() {
		return errors.New("kubetest: the API server is already killed")
	}
	as := e.env.ControlPlane.GetAPIServer()
	port := as.SecureServing.Port
	pid, err := childProcess("kube-apiserver", "--secure-port="+port)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kubetest: killing kube-apiserver (pid %d): %w", pid, err)
	}
	e.killedAt = time.Now()
	if e.certDir == "" {
		e.certDir = as.CertDir
	}
	// The kernel closes the listener when the process dies; envtest's
	// goroutine reaps it.
	addr := net.JoinHostPort(as.SecureServing.Address, port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return nil
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("kubetest: %s still accepts connections 30s after SIGKILL of pid %d", addr, pid)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// StartAPIServer starts kube-apiserver again after KillAPIServer, on the
// same etcd, address, port and certificates, and returns once it answers
// /readyz (its CRDs are served again). It returns how long the API server
// was down: from the kill until ready.
func (e *Env) StartAPIServer() (time.Duration, error) {
	e.restartMu.Lock()
	defer e.restartMu.Unlock()
	if e.env == nil {
		return 0, errors.New("kubetest: the API server is stopped")
	}
	if e.killedAt.IsZero() {
		return 0, errors.New("kubetest: the API server is running (KillAPIServer first)")
	}
	as := e.env.ControlPlane.GetAPIServer()
	// envtest's Start reuses CertDir (and the certificates in it) and the
	// port; the process state is new, and no longer removes the directory
	// at Stop (Env.Stop does).
	as.StartTimeout = RestartTimeout
	if err := as.Start(); err != nil {
		return 0, fmt.Errorf("kubetest: restarting kube-apiserver: %w", err)
	}
	if err := e.waitReady(RestartTimeout); err != nil {
		return 0, err
	}
	down := time.Since(e.killedAt)
	e.killedAt = time.Time{}
	return down, nil
}

// RestartAPIServer kills kube-apiserver (KillAPIServer), keeps it down for
// down, and starts it again (StartAPIServer). It returns how long the API
// server was unreachable: down plus its start until ready.
func (e *Env) RestartAPIServer(down time.Duration) (time.Duration, error) {
	if err := e.KillAPIServer(); err != nil {
		return 0, err
	}
	<-time.After(down) // the outage itself: nothing to wait for
	return e.StartAPIServer()
}

// waitReady polls /readyz until it answers 200 ok.
func (e *Env) waitReady(timeout time.Duration) error {
	cfg := rest.CopyConfig(e.Config)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/readyz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(b.String()))
		} else {
			last = err.Error()
		}
		cancel()
		if time.Now().After(deadline) {
			return fmt.Errorf("kubetest: the restarted kube-apiserver is not ready after %s: %s", timeout, last)
		}
		<-time.After(100 * time.Millisecond)
	}
}

// childProcess is the pid of this process's child whose executable is
// named name and whose arguments include arg (Linux: /proc).
func childProcess(name, arg string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("kubetest: finding %s: %w", name, err)
	}
	self := os.Getpid()
	for _, de := range ents {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ")".
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(self) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", de.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != name {
			continue
		}
		for _, a := range args[1:] {
			if a == arg {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("kubetest: no child %s of pid %d with %s", name, self, arg)
}

// WaitFor checks cond every 20 ms until it holds, and fails the test
// naming what it waited for when d passes first. For state held by the
// API server or a manager, which a test can only observe by reading it.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		<-time.After(20 * time.Millisecond)
	}
}
