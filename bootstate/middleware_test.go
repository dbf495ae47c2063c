package bootstate_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage/memstore"
)

// ipxeHandler is a host's own handler: it serves a script naming the path,
// with a custom header and status, so tests can compare wrapped and bare.
type ipxeHandler struct {
	calls atomic.Int32
	// sawSignal reports, from inside the handler, whether the signal was
	// already recorded: the middleware records before serving.
	sawSignal func() bool
	saw       atomic.Bool
}

func (h *ipxeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.calls.Add(1)
	if h.sawSignal != nil && h.sawSignal() {
		h.saw.Store(true)
	}
	w.Header().Set("X-Host", "mine")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "#!ipxe\necho %s %s\n", r.URL.Path, r.URL.RawQuery)
}

func serve(h http.Handler, target string) *httptest.ResponseRecorder {
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, target, nil))
	return rr
}

func TestFetchMiddlewareRecordsBeforeServingAndServesUnchanged(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a",
		Policy: bootstate.AllOfSignals(bootstate.SignalIPXEScriptFetched, bootstate.SignalIgnitionDataFetched)})
	host := &ipxeHandler{sawSignal: func() bool {
		rec, err := e.tr.Get(ctx, uuidA)
		return err == nil && rec.HasSignal(bootstate.SignalIPXEScriptFetched)
	}}
	wrapped := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched})(host)

	target := "/ipxe/" + strings.ToUpper(uuidA) + "?arch=x86_64"
	bare := serve(&ipxeHandler{}, target)
	got := serve(wrapped, target)
	if got.Code != bare.Code || got.Body.String() != bare.Body.String() || got.Header().Get("X-Host") != "mine" {
		t.Fatalf("wrapped served %d %q %v, bare %d %q", got.Code, got.Body, got.Header(), bare.Code, bare.Body)
	}
	if !host.saw.Load() {
		t.Fatal("the signal was not recorded before the wrapped handler ran")
	}
	// Ignition-style path with an extension, through a second middleware.
	ign := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIgnitionDataFetched})(&ipxeHandler{})
	serve(ign, "/ignition/"+uuidA+".ign")
	rec, err := e.tr.Get(ctx, uuidA)
	if err != nil || rec.Result != conditions.ResultSucceeded {
		t.Fatalf("after both fetches: %+v %v", rec, err)
	}
	c := conditions.Get(rec.Conditions, bootstate.SignalIPXEScriptFetched)
	if c.Message != "fetched with GET from 192.0.2.1:1234" {
		t.Fatalf("fetch message = %q", c.Message)
	}
}

func TestFetchMiddlewarePassesThroughWhatItCannotRecord(t *testing.T) {
	e := newEnv(t, nil)
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a2"})
	host := &ipxeHandler{}
	wrapped := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched})(host)
	before := snapshot(t, e.store)
	for _, target := range []string{
		"/ipxe/default",                      // names no system
		"/ipxe/" + uuidB,                     // unknown system
		"/ipxe/" + uuidA + "?attempt=a1",     // stale attempt
		"/ipxe/" + uuidA + "?attempt=bad%20", // malformed attempt
	} {
		if rr := serve(wrapped, target); rr.Code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", target, rr.Code, rr.Body)
		}
	}
	if host.calls.Load() != 4 {
		t.Fatalf("wrapped handler ran %d times, want 4", host.calls.Load())
	}
	if after := snapshot(t, e.store); len(after) != len(before) || after["bootstate/"+uuidA] != before["bootstate/"+uuidA] {
		t.Fatal("unrecordable fetches wrote to the store")
	}
}

func TestFetchMiddlewareStoreFailure(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		t.Run(fmt.Sprintf("FailOpen=%v", failOpen), func(t *testing.T) {
			fs := &failingStore{Store: memstore.New()}
			e := newEnv(t, func(c *bootstate.Config) { c.Store = fs })
			mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
			host := &ipxeHandler{}
			wrapped := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched, FailOpen: failOpen})(host)
			fs.broken.Store(true)
			rr := serve(wrapped, "/ipxe/"+uuidA)
			if failOpen {
				if rr.Code != http.StatusAccepted || host.calls.Load() != 1 {
					t.Fatalf("fail-open: %d, handler calls %d", rr.Code, host.calls.Load())
				}
				return
			}
			if rr.Code != http.StatusServiceUnavailable || rr.Header().Get("Retry-After") == "" || host.calls.Load() != 0 {
				t.Fatalf("fail-closed: %d %v, handler calls %d", rr.Code, rr.Header(), host.calls.Load())
			}
			fs.broken.Store(false)
			if rr := serve(wrapped, "/ipxe/"+uuidA); rr.Code != http.StatusAccepted {
				t.Fatalf("retry: %d", rr.Code)
			}
		})
	}
}

func TestFetchMiddlewareRequireToken(t *testing.T) {
	e := newEnv(t, nil)
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
	tok, _ := e.tr.Token(uuidA, "a")
	host := &ipxeHandler{}
	wrapped := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIgnitionDataFetched, RequireToken: true})(host)
	before := snapshot(t, e.store)
	for _, target := range []string{"/ign/" + uuidA, "/ign/" + uuidA + "?token=" + tok[:40] + "xyz"} {
		rr := serve(wrapped, target)
		body, _ := io.ReadAll(rr.Body)
		if rr.Code != http.StatusUnauthorized || strings.Contains(string(body), tok) {
			t.Fatalf("%s: %d %s", target, rr.Code, body)
		}
	}
	if host.calls.Load() != 0 {
		t.Fatal("unauthenticated fetch was served")
	}
	if after := snapshot(t, e.store); after["bootstate/"+uuidA] != before["bootstate/"+uuidA] {
		t.Fatal("unauthenticated fetch was recorded")
	}
	// Token without attempt: checked against the current attempt.
	if rr := serve(wrapped, "/ign/"+uuidA+"?token="+tok); rr.Code != http.StatusAccepted {
		t.Fatalf("valid token: %d %s", rr.Code, rr.Body)
	}
	rec, _ := e.tr.Get(context.Background(), uuidA)
	if !rec.HasSignal(bootstate.SignalIgnitionDataFetched) {
		t.Fatal("authenticated fetch not recorded")
	}
	if strings.Contains(e.logs.String(), tok) || strings.Contains(dump(t, e.store), tok) {
		t.Fatal("token leaked into logs or store")
	}
}

func TestFetchMiddlewareCustomExtractor(t *testing.T) {
	e := newEnv(t, nil)
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
	byHeader := func(r *http.Request) (bootstate.FetchIdentity, error) {
		return bootstate.FetchIdentity{SystemUUID: r.Header.Get("X-System-UUID")}, nil
	}
	wrapped := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: "ConfigFetched", Extract: byHeader})(&ipxeHandler{})
	req := httptest.NewRequest(http.MethodGet, "/config", nil)
	req.Header.Set("X-System-UUID", strings.ToUpper(uuidA))
	wrapped.ServeHTTP(httptest.NewRecorder(), req)
	rec, _ := e.tr.Get(context.Background(), uuidA)
	if !rec.HasSignal("ConfigFetched") {
		t.Fatalf("custom extractor: %+v", rec.Conditions)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("FetchMiddleware accepted an invalid signal name")
		}
	}()
	e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: "not valid"})
}

func TestFetchMiddlewareTokenInPathNeverStoredOrLogged(t *testing.T) {
	e := newEnv(t, nil)
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
	tok, _ := e.tr.Token(uuidA, "a")
	// A host whose URLs are /ign/<uuid>/<attempt>/<token>.
	byPath := func(r *http.Request) (bootstate.FetchIdentity, error) {
		p := strings.Split(strings.TrimPrefix(r.URL.Path, "/ign/"), "/")
		if len(p) != 3 {
			return bootstate.FetchIdentity{}, fmt.Errorf("want /ign/<uuid>/<attempt>/<token>")
		}
		return bootstate.FetchIdentity{SystemUUID: p[0], AttemptID: p[1], Token: p[2]}, nil
	}
	wrapped := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIgnitionDataFetched, Extract: byPath, RequireToken: true})(&ipxeHandler{})
	if rr := serve(wrapped, "/ign/"+uuidA+"/a/"+tok); rr.Code != http.StatusAccepted {
		t.Fatalf("%d %s", rr.Code, rr.Body)
	}
	if rr := serve(wrapped, "/ign/"+uuidA+"/a/"+tok+"x"); rr.Code != http.StatusUnauthorized || strings.Contains(rr.Body.String(), tok) {
		t.Fatalf("%d %s", rr.Code, rr.Body)
	}
	rec, _ := e.tr.Get(context.Background(), uuidA)
	if !rec.HasSignal(bootstate.SignalIgnitionDataFetched) {
		t.Fatal("not recorded")
	}
	if strings.Contains(dump(t, e.store), tok) || strings.Contains(e.logs.String(), tok) {
		t.Fatal("a token carried in the path reached the store or the logs")
	}
}

// With RequireToken, a fetch whose token cannot be checked is never served:
// not when the store is down (even with FailOpen, which covers recording
// only), and not for a system with no open attempt.
func TestRequireTokenNeverServesUnchecked(t *testing.T) {
	fs := &failingStore{Store: memstore.New()}
	e := newEnv(t, func(c *bootstate.Config) { c.Store = fs })
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
	host := &ipxeHandler{}
	mw := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIgnitionDataFetched, RequireToken: true, FailOpen: true})(host)
	fs.broken.Store(true)
	if rr := serve(mw, "/ignition/"+uuidA+".ign"); rr.Code != http.StatusServiceUnavailable {
		t.Fatalf("store down: status %d, want 503", rr.Code)
	}
	fs.broken.Store(false)
	if rr := serve(mw, "/ignition/"+uuidB+".ign"); rr.Code != http.StatusUnauthorized {
		t.Fatalf("unknown system without attempt: status %d, want 401", rr.Code)
	}
	if rr := serve(mw, "/ignition/"+uuidB+".ign?attempt=x"); rr.Code != http.StatusUnauthorized {
		t.Fatalf("unknown system with attempt: status %d, want 401", rr.Code)
	}
	if n := host.calls.Load(); n != 0 {
		t.Fatalf("the host's handler served %d unchecked fetches", n)
	}
}
