package bootstate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// post sends body to h and returns the status and the decoded body.
func post(t *testing.T, h http.Handler, method, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, "/any/mount/point", strings.NewReader(body))
	req.RemoteAddr = "192.0.2.7:4242"
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	var out map[string]any
	if err := json.Unmarshal(rr.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %q: answer %d is not JSON: %q", method, body, rr.Code, rr.Body.String())
	}
	if ct := rr.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	return rr.Code, out
}

func jsonBody(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandlerAcceptsAndIsIdempotent(t *testing.T) {
	e := newEnv(t, nil)
	h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{})
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "job-1"})
	tok, _ := e.tr.Token(uuidA, "job-1")
	// Upper-case UUID: some OSes report it that way.
	body := jsonBody(t, map[string]string{"systemUUID": strings.ToUpper(uuidA), "attemptID": "job-1", "token": tok, "message": "flatcar up"})
	code, out := post(t, h, http.MethodPost, body)
	if code != http.StatusOK || out["completed"] != true || out["result"] != "Succeeded" || out["systemUUID"] != uuidA {
		t.Fatalf("first post: %d %v", code, out)
	}
	rec, _ := e.tr.Get(context.Background(), uuidA)
	c := conditions.Get(rec.Conditions, bootstate.SignalBootStateReceived)
	if c == nil || c.Message != "flatcar up" {
		t.Fatalf("signal condition = %+v", c)
	}
	before := snapshot(t, e.store)
	code, out = post(t, h, http.MethodPost, body)
	if code != http.StatusOK || out["completed"] != true {
		t.Fatalf("repeat: %d %v", code, out)
	}
	if after := snapshot(t, e.store); after["bootstate/"+uuidA] != before["bootstate/"+uuidA] {
		t.Fatal("repeat wrote the record")
	}
	for _, secret := range []string{tok, string(testSecret)} {
		if strings.Contains(dump(t, e.store), secret) || strings.Contains(e.logs.String(), secret) {
			t.Fatal("token or secret leaked into the store or the logs")
		}
	}
}

func TestHandlerBadInput(t *testing.T) {
	e := newEnv(t, func(c *bootstate.Config) {
		c.CallbackSignals = []string{bootstate.SignalBootStateReceived, "DiskWiped"}
	})
	h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{MaxBodyBytes: 512})
	ctx := context.Background()
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "old"})
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "new"})
	tokNew, _ := e.tr.Token(uuidA, "new")
	tokOld, _ := e.tr.Token(uuidA, "old")
	tokB, _ := e.tr.Token(uuidB, "new")
	wrongSecret := newEnv(t, func(c *bootstate.Config) { c.Secret = []byte("another-secret-of-16+bytes") })
	tokForged, _ := wrongSecret.tr.Token(uuidA, "new")
	ok := func(extra map[string]any) string {
		m := map[string]any{"systemUUID": uuidA, "attemptID": "new", "token": tokNew}
		for k, v := range extra {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return jsonBody(t, m)
	}
	cases := []struct {
		name   string
		method string
		body   string
		status int
		want   string
	}{
		{"GET", http.MethodGet, `{}`, 405, "method GET not allowed"},
		{"empty body", "", ``, 400, "empty request body"},
		{"malformed JSON", "", `{"systemUUID": `, 400, "malformed JSON"},
		{"syntax error", "", `{"systemUUID" "x"}`, 400, "malformed JSON at byte"},
		{"not an object", "", `[1,2]`, 400, "want an object"},
		{"wrong type uuid", "", `{"systemUUID": 42}`, 400, `field "systemUUID": got JSON number, want string`},
		{"wrong type token", "", `{"systemUUID": "` + uuidA + `", "token": {"a": 1}}`, 400, `field "token": got JSON object`},
		{"unknown field", "", ok(map[string]any{"hostname": "x"}), 400, `unknown field "hostname"`},
		{"trailing data", "", ok(nil) + `{}`, 400, "unexpected data after the JSON object"},
		{"oversized", "", ok(map[string]any{"message": strings.Repeat("x", 600)}), 413, "more than 512 bytes"},
		{"missing uuid", "", ok(map[string]any{"systemUUID": nil}), 400, `field "systemUUID" is required`},
		{"short uuid", "", ok(map[string]any{"systemUUID": "4c4c4544"}), 400, `"4c4c4544": want 36 characters`},
		{"non-hex uuid", "", ok(map[string]any{"systemUUID": "zc4c4544-0042-4a10-8031-b2c04f4e4a31"}), 400, "is not a hexadecimal digit"},
		{"uuid missing dashes", "", ok(map[string]any{"systemUUID": "4c4c454400424a108031b2c04f4e4a31ffff"}), 400, "want '-' at position 9"},
		{"bad attempt", "", ok(map[string]any{"attemptID": "has space"}), 400, `field "attemptID"`},
		{"bad signal name", "", ok(map[string]any{"signal": "no-dashes"}), 400, `field "signal"`},
		{"control chars in message", "", ok(map[string]any{"message": "a\x1b[2Jb"}), 400, `field "message": want printable`},
		{"signal not allowed", "", ok(map[string]any{"signal": bootstate.SignalIPXEScriptFetched}), 403, `"IPXEScriptFetched"`},
		{"missing attempt with auth", "", ok(map[string]any{"attemptID": nil}), 400, `"attemptID" is required when boot tokens are enabled`},
		{"missing token", "", ok(map[string]any{"token": nil}), 401, "no token presented"},
		{"wrong token", "", ok(map[string]any{"token": tokNew[:42] + "A"}), 401, "token does not match"},
		{"forged with other secret", "", ok(map[string]any{"token": tokForged}), 401, "token does not match"},
		{"token of another system", "", ok(map[string]any{"token": tokB}), 401, "token does not match"},
		{"token of another attempt", "", ok(map[string]any{"token": tokOld}), 401, "token does not match"},
		{"replay from older attempt", "", ok(map[string]any{"attemptID": "old", "token": tokOld}), 409, "not the system's current boot attempt"},
		{"unknown system", "", ok(map[string]any{"systemUUID": uuidB, "token": tokB}), 404, "no boot attempt was started"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			before := snapshot(t, e.store)
			code, out := post(t, h, method, c.body)
			msg, _ := out["error"].(string)
			if code != c.status || !strings.Contains(msg, c.want) {
				t.Fatalf("got %d %q, want %d containing %q", code, msg, c.status, c.want)
			}
			for _, tok := range []string{tokNew, tokOld, tokB, tokForged} {
				if strings.Contains(msg, tok) {
					t.Fatalf("error message leaks a token: %q", msg)
				}
			}
			after := snapshot(t, e.store)
			if len(after) != len(before) || after["bootstate/"+uuidA] != before["bootstate/"+uuidA] {
				t.Fatalf("rejected request wrote: %v -> %v", before, after)
			}
		})
	}
	rec, _ := e.tr.Get(ctx, uuidA)
	if rec.HasSignal(bootstate.SignalBootStateReceived) {
		t.Fatal("a rejected request recorded the signal")
	}
	logs := e.logs.String()
	for _, tok := range []string{tokNew, tokOld, tokB, tokForged, string(testSecret)} {
		if strings.Contains(logs, tok) {
			t.Fatal("logs leak a token or the secret")
		}
	}
	// The host-defined callback signal is accepted.
	if code, out := post(t, h, http.MethodPost, ok(map[string]any{"signal": "DiskWiped"})); code != 200 || out["completed"] != false {
		t.Fatalf("host signal: %d %v", code, out)
	}
}

func TestHandlerWithoutAuth(t *testing.T) {
	e := newEnv(t, func(c *bootstate.Config) { c.Secret = nil; c.InsecureSkipAuth = true })
	h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{})
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a2"})
	// No attempt: the current one. A stale attempt is still refused.
	if code, out := post(t, h, http.MethodPost, `{"systemUUID":"`+uuidA+`","attemptID":"a1"}`); code != 409 {
		t.Fatalf("stale attempt without auth: %d %v", code, out)
	}
	if code, out := post(t, h, http.MethodPost, `{"systemUUID":"`+strings.ToUpper(uuidA)+`"}`); code != 200 || out["attemptID"] != "a2" {
		t.Fatalf("lab post: %d %v", code, out)
	}
}

func TestHandlerStoreFailureIs503AndNothingWritten(t *testing.T) {
	for _, name := range []string{"all calls fail", "writes fail"} {
		t.Run(name, func(t *testing.T) {
			mem := memstore.New()
			fs := &failingStore{Store: mem}
			fw := &failWritesStore{Store: mem}
			e := newEnv(t, func(c *bootstate.Config) {
				c.InsecureSkipAuth, c.Secret = true, nil
				if name == "writes fail" {
					c.Store = fw
				} else {
					c.Store = fs
				}
			})
			h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{})
			mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
			fs.broken.Store(true)
			fw.broken.Store(true)
			req := httptest.NewRequest(http.MethodPost, "/bootstate", strings.NewReader(`{"systemUUID":"`+uuidA+`"}`))
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, req)
			body, _ := io.ReadAll(rr.Body)
			if rr.Code != http.StatusServiceUnavailable || rr.Header().Get("Retry-After") == "" || !strings.Contains(string(body), "unavailable") {
				t.Fatalf("got %d %q %v", rr.Code, body, rr.Header())
			}
			rec, err := newEnv(t, func(c *bootstate.Config) { c.Store = mem }).tr.Get(context.Background(), uuidA)
			if err != nil || rec.HasSignal(bootstate.SignalBootStateReceived) {
				t.Fatalf("store holds the signal after a 503: %+v %v", rec, err)
			}
			// Store back: the retry succeeds.
			fs.broken.Store(false)
			fw.broken.Store(false)
			rr = httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequest(http.MethodPost, "/bootstate", strings.NewReader(`{"systemUUID":"`+uuidA+`"}`)))
			if rr.Code != 200 {
				t.Fatalf("retry: %d %s", rr.Code, rr.Body)
			}
		})
	}
}

// pathLeakStore fails every write with an error that names a database
// file, the way bbolt or SQLite errors do.
type pathLeakStore struct {
	storage.Store
	broken atomic.Bool
}

const leakPath = "/var/lib/bmckit/secret-bootstate.db"

func (f *pathLeakStore) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	if f.broken.Load() {
		return 0, fmt.Errorf("open %s: input/output error (internal: page 42 checksum mismatch)", leakPath)
	}
	return f.Store.Update(ctx, key, value, rev)
}

func TestHandler503BodyIsGeneric(t *testing.T) {
	fs := &pathLeakStore{Store: memstore.New()}
	e := newEnv(t, func(c *bootstate.Config) {
		c.InsecureSkipAuth, c.Secret = true, nil
		c.Store = fs
	})
	h := bootstate.NewHandler(e.tr, bootstate.HandlerConfig{})
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a"})
	fs.broken.Store(true)
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodPost, "/bootstate", strings.NewReader(`{"systemUUID":"`+uuidA+`"}`)))
	body := rr.Body.String()
	if rr.Code != http.StatusServiceUnavailable || rr.Header().Get("Retry-After") == "" {
		t.Fatalf("got %d %q %v", rr.Code, body, rr.Header())
	}
	for _, leak := range []string{leakPath, "secret-bootstate", "checksum", "input/output", "page 42"} {
		if strings.Contains(body, leak) {
			t.Fatalf("503 body leaks %q: %s", leak, body)
		}
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(body), &out); err != nil || out["error"] != "boot state store unavailable; retry" {
		t.Fatalf("503 body = %q (%v), want the generic message", body, err)
	}
	if !strings.Contains(e.logs.String(), leakPath) {
		t.Fatalf("the store's error is not in the logs:\n%s", e.logs.String())
	}
}
