package bmcevents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

var testSecret = []byte("0123456789abcdef-receiver-secret")

const base = "http://127.0.0.1:9/bmc-events"

type logSink struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logSink) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.WriteString(prefix + " " + args + "\n")
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newReceiver(t *testing.T, s storage.Store, logs *logSink) *bmcevents.Receiver {
	t.Helper()
	cfg := bmcevents.Config{Store: s, Secret: testSecret, MaxBodyBytes: 4096,
		Clock: clock.NewFake(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))}
	if logs != nil {
		cfg.Logger = funcr.New(logs.add, funcr.Options{Verbosity: 9})
	}
	r, err := bmcevents.NewReceiver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dest(t *testing.T, source string) string {
	t.Helper()
	d, err := bmcevents.Destination(base, testSecret, source)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func post(t *testing.T, h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(method, u.RequestURI(), strings.NewReader(body))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

const eventBody = `{"@odata.type":"#Event.v1_7_0.Event","Id":"7","Name":"Event Array","Context":"bmckit:test",
 "Events":[{"EventType":"Alert","EventId":"7","Severity":"Critical","MessageSeverity":"Critical",
  "Message":"Power supply 1 failed.","MessageId":"OpenBMC.0.1.PowerSupplyFailed","MessageArgs":["1"],
  "OriginOfCondition":{"@odata.id":"/redfish/v1/Systems/1/Power"},"EventTimestamp":"2025-01-02T03:00:00+01:00","Oem":{}}]}`

func stored(t *testing.T, s storage.Store) []bmcevents.Event {
	t.Helper()
	recs, err := s.List(context.Background(), bmcevents.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []bmcevents.Event
	for _, r := range recs {
		e, err := bmcevents.DecodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestReceiverStoresOnceAndDropsDuplicates(t *testing.T) {
	s := memstore.New()
	logs := &logSink{}
	r := newReceiver(t, s, logs)
	d := dest(t, "node-1")
	w := post(t, r, "POST", d, eventBody)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"stored":1`) {
		t.Fatalf("first push: %d %s", w.Code, w.Body)
	}
	for range 3 { // a BMC retrying the same push
		w = post(t, r, "POST", d, eventBody)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"duplicates":1`) {
			t.Fatalf("retry: %d %s", w.Code, w.Body)
		}
	}
	evs := stored(t, s)
	if len(evs) != 1 {
		t.Fatalf("%d events stored, want 1", len(evs))
	}
	e := evs[0]
	want := bmcevents.Event{Source: "node-1", ID: "7", Type: "Alert", Severity: bmc.SeverityCritical,
		Message: "Power supply 1 failed.", MessageID: "OpenBMC.0.1.PowerSupplyFailed",
		Origin: "/redfish/v1/Systems/1/Power", System: "1",
		Time: time.Date(2025, 1, 2, 2, 0, 0, 0, time.UTC), Received: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Via: bmcevents.KindPush}
	if e != want || !e.Critical() {
		t.Fatalf("stored %+v\nwant     %+v", e, want)
	}
	if st := r.Stats(); st.Stored != 1 || st.Duplicates != 3 || st.Rejected != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The same EventId with another timestamp is another event (a BMC
	// whose counter restarted), and another source's event 7 is its own.
	post(t, r, "POST", d, strings.Replace(eventBody, "03:00:00", "04:00:00", 1))
	post(t, r, "POST", dest(t, "node-2"), eventBody)
	if n := len(stored(t, s)); n != 3 {
		t.Fatalf("%d events stored, want 3", n)
	}
}

func TestReceiverRefusals(t *testing.T) {
	d := dest(t, "node-1")
	other := dest(t, "node-2")
	tok := d[strings.LastIndexByte(d, '/')+1:]
	wrongTok := strings.TrimSuffix(other, other[strings.LastIndexByte(other, '/')+1:]) // node-2/ + nothing
	for _, tc := range []struct {
		name, method, target, body string
		status                     int
	}{
		{"GET", "GET", d, "", http.StatusMethodNotAllowed},
		{"other source's token", "POST", base + "/node-1/" + other[strings.LastIndexByte(other, '/')+1:], eventBody, http.StatusUnauthorized},
		{"token of another source used for it", "POST", base + "/node-2/" + tok, eventBody, http.StatusUnauthorized},
		{"no token", "POST", wrongTok, eventBody, http.StatusUnauthorized},
		{"truncated token", "POST", d[:len(d)-1], eventBody, http.StatusUnauthorized},
		{"bad source", "POST", base + "/..bad/" + tok, eventBody, http.StatusNotFound},
		{"no path", "POST", "http://127.0.0.1/", eventBody, http.StatusNotFound},
		{"empty body", "POST", d, "", http.StatusBadRequest},
		{"not JSON", "POST", d, "power supply failed", http.StatusBadRequest},
		{"array", "POST", d, "[" + eventBody + "]", http.StatusBadRequest},
		{"no Events", "POST", d, `{"Id":"1"}`, http.StatusBadRequest},
		{"empty Events", "POST", d, `{"Events":[]}`, http.StatusBadRequest},
		{"record not an object", "POST", d, `{"Events":[1]}`, http.StatusBadRequest},
		{"wrong type", "POST", d, `{"Events":[{"EventId":{"x":1}}]}`, http.StatusBadRequest},
		{"trailing data", "POST", d, eventBody + "{}", http.StatusBadRequest},
		{"second record bad", "POST", d, `{"Events":[{"EventId":"1"},{"Message":[]}]}`, http.StatusBadRequest},
		{"oversized", "POST", d, `{"Events":[{"EventId":"1","Message":"` + strings.Repeat("x", 5000) + `"}]}`, http.StatusRequestEntityTooLarge},
		{"too many records", "POST", d, `{"Events":[` + strings.Repeat(`{"EventId":"1"},`, bmcevents.MaxRecords) + `{}]}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New()
			logs := &logSink{}
			r := newReceiver(t, s, logs)
			w := post(t, r, tc.method, tc.target, tc.body)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if n := len(stored(t, s)); n != 0 {
				t.Fatalf("%d events stored after a refusal", n)
			}
			if r.Stats().Rejected != 1 {
				t.Fatalf("stats %+v", r.Stats())
			}
			for _, out := range []string{w.Body.String(), logs.String()} {
				if strings.Contains(out, tok) {
					t.Fatalf("the token leaked: %s", out)
				}
			}
		})
	}
}

func TestReceiverOlderShapesAndRotation(t *testing.T) {
	s := memstore.New()
	old := []byte("an-older-secret-being-rotated-out")
	r, err := bmcevents.NewReceiver(bmcevents.Config{Store: s, Secret: testSecret, PreviousSecrets: [][]byte{old}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := bmcevents.Destination(base, old, "ilo-7")
	// Event v1_0: OriginOfCondition a string, Severity, EventId a number,
	// no EventTimestamp; a second record without EventId.
	body := `{"@odata.type":"#Event.v1_0_0.Event","Id":"1","Events":[
	  {"EventType":"StatusChange","EventId":1234,"Severity":"Warning","Message":"Fan 2 degraded",
	   "MessageId":"iLOEvents.2.1.FanDegraded","OriginOfCondition":"/redfish/v1/Chassis/1/Thermal"},
	  {"EventType":"Alert","Severity":"OK","Message":"Fan 2 ok","OriginOfCondition":"https://10.0.0.7/redfish/v1/Systems/1/"}]}`
	w := post(t, r, "POST", d, body)
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	evs := stored(t, s)
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	byID := map[string]bmcevents.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	if e := byID["1234"]; e.Severity != bmc.SeverityWarning || e.Origin != "/redfish/v1/Chassis/1/Thermal" || e.System != "" {
		t.Fatalf("v1_0 record: %+v", e)
	}
	if e := byID[""]; e.Origin != "/redfish/v1/Systems/1" || e.System != "1" || e.Severity != bmc.SeverityOK {
		t.Fatalf("record without EventId: %+v", e)
	}
	if w := post(t, r, "POST", d, body); !strings.Contains(w.Body.String(), `"duplicates":2`) {
		t.Fatalf("retry of a push with an EventId-less record: %s", w.Body)
	}
}

// failStore fails every Create after the first n.
type failStore struct {
	storage.Store
	mu sync.Mutex
	n  int
}

func (f *failStore) Create(ctx context.Context, key string, v []byte) (int64, error) {
	f.mu.Lock()
	f.n--
	fail := f.n < 0
	f.mu.Unlock()
	if fail {
		return 0, errors.New("disk on fire at /var/lib/secret/path")
	}
	return f.Store.Create(ctx, key, v)
}

// A store failure midway answers 503 (the BMC retries); the retry stores
// the rest and drops what the first attempt stored.
func TestReceiverStoreFailureThenRetry(t *testing.T) {
	mem := memstore.New()
	fs := &failStore{Store: mem, n: 1}
	r := newReceiver(t, fs, nil)
	d := dest(t, "node-1")
	body := `{"Events":[{"EventId":"1","Message":"a"},{"EventId":"2","Message":"b"},{"EventId":"3","Message":"c"}]}`
	w := post(t, r, "POST", d, body)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || strings.Contains(w.Body.String(), "secret/path") {
		t.Fatalf("%d %v %s", w.Code, w.Header(), w.Body)
	}
	fs.mu.Lock()
	fs.n = 100
	fs.mu.Unlock()
	w = post(t, r, "POST", d, body)
	var resp bmcevents.Response
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || w.Code != 200 || resp.Stored != 2 || resp.Duplicates != 1 {
		t.Fatalf("retry: %d %s", w.Code, w.Body)
	}
	if n := len(stored(t, mem)); n != 3 {
		t.Fatalf("%d stored", n)
	}
}

func TestFollowerReportsEventsInOrder(t *testing.T) {
	s := memstore.New()
	r := newReceiver(t, s, nil)
	f := bmcevents.NewFollower(s)
	ctx := context.Background()
	if evs, _, err := f.Next(ctx); err != nil || len(evs) != 0 {
		t.Fatalf("%v %v", evs, err)
	}
	for _, id := range []string{"9", "3", "5"} {
		body := bytes.ReplaceAll([]byte(eventBody), []byte(`"EventId":"7"`), []byte(`"EventId":"`+id+`"`))
		post(t, r, "POST", dest(t, "n"), string(body))
	}
	evs, skipped, err := f.Next(ctx)
	if err != nil || skipped != 0 || len(evs) != 3 || evs[0].ID != "9" || evs[1].ID != "3" || evs[2].ID != "5" {
		t.Fatalf("%+v %d %v", evs, skipped, err)
	}
	if evs, _, _ := f.Next(ctx); len(evs) != 0 {
		t.Fatalf("again: %+v", evs)
	}
}

func TestConfigChecks(t *testing.T) {
	if _, err := bmcevents.NewReceiver(bmcevents.Config{Store: memstore.New(), Secret: []byte("short")}); !errors.Is(err, bmcevents.ErrShortSecret) {
		t.Fatal(err)
	}
	if _, err := bmcevents.NewReceiver(bmcevents.Config{Secret: testSecret}); err == nil {
		t.Fatal("no store accepted")
	}
	for _, b := range []string{"ftp://x/y", "/relative", "http://u:p@h/x", "http://h/x?q=1"} {
		if _, err := bmcevents.Destination(b, testSecret, "a"); err == nil || strings.Contains(err.Error(), "u:p") {
			t.Fatalf("%s: %v", b, err)
		}
	}
	for _, src := range []string{"", ".x", "a/b", "a b", strings.Repeat("a", 129)} {
		if err := bmcevents.ValidateSource(src); err == nil {
			t.Fatalf("source %q accepted", src)
		}
	}
}
