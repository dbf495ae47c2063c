package bootstate_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bootstate"
)

// A fetch from an address the current attempt does not allow gets 403 and
// is never served, whatever attempt it names: a stale one, a made-up one, a
// malformed one, or the current one with its valid token. The body names
// neither the allowed addresses nor the current attempt, and nothing is
// written. (Before, a named attempt that was not current was served
// unchanged, so the host rendered the bound machine's current token.)
func TestFetchFromForeignAddressWithAttemptGets403(t *testing.T) {
	for _, requireToken := range []bool{false, true} {
		e := newEnv(t, nil)
		mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "old"})
		mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "cur", AllowedSources: []string{"198.51.100.7"}})
		tok, _ := e.tr.Token(uuidA, "cur")
		served := 0
		ipxe := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched, RequireToken: requireToken})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served++
				_, _ = w.Write([]byte("#!ipxe\nset token " + tok + "\n"))
			}))
		before := snapshot(t, e.store)
		for _, q := range []string{"?attempt=old", "?attempt=made-up", "?attempt=bad%20", "?attempt=cur&token=" + tok, "?attempt=old&token=x", ""} {
			req := httptest.NewRequest(http.MethodGet, "/ipxe/"+uuidA+q, nil)
			req.RemoteAddr = "192.0.2.99:4000"
			rr := httptest.NewRecorder()
			ipxe.ServeHTTP(rr, req)
			body := rr.Body.String()
			if rr.Code != http.StatusForbidden {
				t.Fatalf("requireToken=%v, fetch %q from a foreign address: %d %s, want 403", requireToken, q, rr.Code, body)
			}
			for _, leak := range []string{tok, "198.51.100", "cur"} {
				if strings.Contains(body, leak) {
					t.Fatalf("requireToken=%v, fetch %q: body %q shows %q", requireToken, q, body, leak)
				}
			}
		}
		if served != 0 {
			t.Fatalf("requireToken=%v: the host's handler served %d foreign fetches", requireToken, served)
		}
		assertUnchanged(t, e.store, before)
		// The bound address is still served.
		req := httptest.NewRequest(http.MethodGet, "/ipxe/"+uuidA+"?attempt=cur&token="+tok, nil)
		req.RemoteAddr = "198.51.100.7:4000"
		rr := httptest.NewRecorder()
		ipxe.ServeHTTP(rr, req)
		if rr.Code != http.StatusOK || served != 1 {
			t.Fatalf("requireToken=%v, fetch from the bound address: %d, served %d", requireToken, rr.Code, served)
		}
	}
}

// A stored record that does not decode answers the same class on every
// route: 500 with a generic body, for callbacks and for fetches, and the
// fetch is not served.
func TestCorruptRecordIs500OnEveryRoute(t *testing.T) {
	e := newEnv(t, nil)
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
	tok, _ := e.tr.Token(uuidA, "a")
	ctx := context.Background()
	var key string
	for k := range snapshot(t, e.store) {
		if strings.HasSuffix(k, uuidA) {
			key = k
		}
	}
	rec, err := e.store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Update(ctx, key, []byte(`{"systemUUID": 7`), rec.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := e.tr.Get(ctx, uuidA); !errors.Is(err, bootstate.ErrCorruptRecord) {
		t.Fatalf("Get of a corrupt record: %v, want ErrCorruptRecord", err)
	}
	h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{})
	code, out := post(t, h, http.MethodPost, jsonBody(t, map[string]string{"systemUUID": uuidA, "attemptID": "a", "token": tok}))
	if msg, _ := out["error"].(string); code != http.StatusInternalServerError || strings.Contains(msg, "decode") {
		t.Fatalf("callback: %d %v, want 500 with a generic body", code, out)
	}
	for _, requireToken := range []bool{false, true} {
		host := &ipxeHandler{}
		mw := e.tr.FetchMiddleware(bootstate.FetchConfig{Signal: bootstate.SignalIPXEScriptFetched, RequireToken: requireToken})(host)
		rr := serve(mw, "/ipxe/"+uuidA+"?attempt=a&token="+tok)
		if rr.Code != http.StatusInternalServerError || strings.Contains(rr.Body.String(), "decode") || host.calls.Load() != 0 {
			t.Fatalf("requireToken=%v fetch: %d %s (served %d), want 500 unserved", requireToken, rr.Code, rr.Body, host.calls.Load())
		}
	}
}

// Rotating the secret: a tracker with the new Secret and the old one in
// PreviousSecrets accepts tokens of attempts started before the rotation
// and mints new tokens with the new secret only; once the old secret is
// dropped, its tokens are refused (401).
func TestSecretRotation(t *testing.T) {
	newSecret := []byte("a-new-secret-of-32-bytes-or-so!!")
	e := newEnv(t, nil)
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "before"})
	oldTok, _ := e.tr.Token(uuidA, "before")

	rotated, err := bootstate.NewTracker(bootstate.Config{Store: e.store, Clock: e.clock, Secret: newSecret, PreviousSecrets: [][]byte{testSecret}})
	if err != nil {
		t.Fatal(err)
	}
	newTok, _ := rotated.Token(uuidA, "before")
	if newTok == oldTok {
		t.Fatal("rotated tracker minted the token with the old secret")
	}
	h := bootstate.NewHandler(rotated, bootstate.HandlerConfig{})
	if code, out := post(t, h, http.MethodPost, jsonBody(t, map[string]string{"systemUUID": uuidA, "attemptID": "before", "token": oldTok})); code != http.StatusOK {
		t.Fatalf("token of an attempt started before the rotation: %d %v, want 200", code, out)
	}

	dropped, err := bootstate.NewTracker(bootstate.Config{Store: e.store, Clock: e.clock, Secret: newSecret})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := post(t, bootstate.NewHandler(dropped, bootstate.HandlerConfig{}), http.MethodPost, jsonBody(t, map[string]string{"systemUUID": uuidA, "attemptID": "before", "token": oldTok})); code != http.StatusUnauthorized {
		t.Fatalf("old token after the old secret was dropped: %d %v, want 401", code, out)
	}
	if _, err := bootstate.NewTracker(bootstate.Config{Store: e.store, Secret: newSecret, PreviousSecrets: [][]byte{[]byte("short")}}); err == nil || !strings.Contains(err.Error(), "PreviousSecrets[0]") {
		t.Fatalf("short previous secret: %v, want an error naming PreviousSecrets[0]", err)
	}
}
