package bmcevents_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
)

var sourcesSecret = []byte("bmcevents-sources-test-secret-01")

// seen counts what the Receiver and the Source did, per way.
type seen struct {
	mu     sync.Mutex
	stored map[bmcevents.Kind]int
	dups   map[bmcevents.Kind]int
	sse    chan string // the EventId of every streamed record handled
}

func newSeen() *seen {
	return &seen{stored: map[bmcevents.Kind]int{}, dups: map[bmcevents.Kind]int{}, sse: make(chan string, 1024)}
}

func (s *seen) observer() bmcevents.Observer {
	return bmcevents.Observer{
		Stored: func(ev bmcevents.Event) {
			s.mu.Lock()
			s.stored[ev.Via]++
			s.mu.Unlock()
			if ev.Via == bmcevents.KindSSE {
				s.sse <- ev.ID
			}
		},
		Duplicate: func(_ string, via bmcevents.Kind) {
			s.mu.Lock()
			s.dups[via]++
			s.mu.Unlock()
			if via == bmcevents.KindSSE {
				s.sse <- ""
			}
		},
	}
}

// TestStreamedAndPushedStoredOnce: a BMC that pushes to a subscription and
// offers an SSE stream sends every event both ways; the host runs a
// Receiver and a Source.Stream on one Store. Every event is stored once,
// the second copy of each dropped as a duplicate, whichever came first.
func TestStreamedAndPushedStoredOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	store := memstore.New()
	obs := newSeen()
	rcv, err := bmcevents.NewReceiver(bmcevents.Config{Store: store, Secret: sourcesSecret, Observer: obs.observer()})
	if err != nil {
		t.Fatal(err)
	}
	base := serveLoopback(t, rcv)

	srv := redfishtest.NewServer(redfishtest.Config{EventStream: true, Subscriptions: redfishtest.SubscriptionsDMTF})
	defer srv.Close()
	drv, err := redfish.NewDialer(redfish.Options{RequestTimeout: 10 * time.Second, RequestsPerSecond: -1}).
		DialDriver(ctx, srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(context.Background())

	src, err := bmcevents.NewSource(bmcevents.SourceConfig{Store: store, Observer: obs.observer()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	streamDone := make(chan error, 1)
	go func() { streamDone <- src.Stream(sctx, drv, "bmc-1") }()

	// The stream is open once an event emitted before any subscription
	// comes back through it.
	warm := 0
	for opened := false; !opened; {
		warm++
		srv.EmitEvent(redfishtest.Event{EventID: fmt.Sprintf("warm-%d", warm), Message: "warm-up"})
		select {
		case <-obs.sse:
			opened = true
		case err := <-streamDone:
			t.Fatalf("Stream ended before the first event: %v", err)
		case <-time.After(50 * time.Millisecond): // emitted before the stream opened: emit another
		case <-ctx.Done():
			t.Fatal("the stream never delivered the warm-up event")
		}
	}
	for len(obs.sse) > 0 { // warm-ups that arrived late
		<-obs.sse
	}
	mgr, err := bmcevents.NewManager(bmcevents.ManagerConfig{Owner: "bmckit:sources-test",
		URL: base + "/bmc-events", Secret: sourcesSecret, NoTestEvent: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Ensure(ctx, drv, "bmc-1"); err != nil {
		t.Fatal(err)
	}

	const n = 40
	sevs := []string{"OK", "Warning", "Critical"}
	for i := range n {
		srv.EmitEvent(redfishtest.Event{EventID: fmt.Sprintf("ev-%02d", i), Severity: sevs[i%3],
			MessageID: "ResourceEvent.1.0.ResourceChanged", Message: fmt.Sprintf("event %d", i)})
	}
	if err := srv.FlushEvents(ctx); err != nil { // every push answered
		t.Fatal(err)
	}
	for got := 0; got < n; {
		select {
		case id := <-obs.sse:
			if strings.HasPrefix(id, "warm-") {
				continue
			}
			got++
		case err := <-streamDone:
			t.Fatalf("Stream ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("%d of %d events came through the stream", got, n)
		}
	}
	stop()
	if err := <-streamDone; err != context.Canceled {
		t.Errorf("Stream after cancel: %v, want context.Canceled", err)
	}

	recs, err := store.List(ctx, bmcevents.Prefix+"bmc-1/")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]int{}
	for _, r := range recs {
		ev, err := bmcevents.DecodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		byID[ev.ID]++
	}
	for i := range n {
		if c := byID[fmt.Sprintf("ev-%02d", i)]; c != 1 {
			t.Errorf("event ev-%02d stored %d times, want 1", i, c)
		}
	}
	warm = 0 // warm-ups emitted before the stream opened were never sent
	for id, c := range byID {
		if strings.HasPrefix(id, "warm-") {
			warm += c
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	stored := obs.stored[bmcevents.KindPush] + obs.stored[bmcevents.KindSSE]
	dups := obs.dups[bmcevents.KindPush] + obs.dups[bmcevents.KindSSE]
	t.Logf("%d events (+%d warm-ups streamed): stored by push %d, by SSE %d; duplicates dropped: push %d, SSE %d",
		n, warm, obs.stored[bmcevents.KindPush], obs.stored[bmcevents.KindSSE], obs.dups[bmcevents.KindPush], obs.dups[bmcevents.KindSSE])
	if stored != n+warm || len(recs) != n+warm {
		t.Errorf("stored %d (records %d), want %d", stored, len(recs), n+warm)
	}
	if dups != n {
		t.Errorf("duplicates %d, want %d (each event's second copy)", dups, n)
	}
	f := bmcevents.NewFollower(store)
	evs, skipped, err := f.Next(ctx)
	if err != nil || skipped != 0 || len(evs) != n+warm {
		t.Errorf("Follower: %d events, %d skipped, %v; want %d", len(evs), skipped, err, n+warm)
	}
	crit := bmcevents.Critical(evs)
	if len(crit) != 1 || len(crit[0].Events) != n/3 {
		t.Errorf("Critical: %d groups, want one of %d events", len(crit), n/3)
	} else if c := crit[0].Condition(); c.Status != "True" || !strings.Contains(c.Message, "13 critical") {
		t.Errorf("Critical condition: %+v", c)
	}
}

// TestPollCursorSurvivesRestart polls a Redfish BMC's logs into a bbolt
// file, closes it (the process ends), adds entries, reopens the file in a
// new Source and polls again: only the new entries are read as new, none
// is stored twice, and a third poll finds nothing.
func TestPollCursorSurvivesRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "events.db")
	for name, style := range map[string]redfishtest.LogStyle{"DMTF": redfishtest.LogsDMTF, "ILO5": redfishtest.LogsILO5, "OpenBMC": redfishtest.LogsOpenBMC, "CrayEX": redfishtest.LogsCrayEX} {
		t.Run(name, func(t *testing.T) {
			srv := redfishtest.NewServer(redfishtest.Config{Logs: style})
			defer srv.Close()
			dialer := redfish.NewDialer(redfish.Options{RequestTimeout: 10 * time.Second, RequestsPerSecond: -1})
			source := fmt.Sprintf("bmc-logs-%d", style)
			poll := func() (bmcevents.PollResult, int) {
				t.Helper()
				st, err := boltstore.Open(path, boltstore.Options{LockTimeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				drv, err := dialer.DialDriver(ctx, srv.Endpoint("1"), srv.Credentials())
				if err != nil {
					t.Fatal(err)
				}
				defer drv.Close(context.Background())
				src, err := bmcevents.NewSource(bmcevents.SourceConfig{Store: st})
				if err != nil {
					t.Fatal(err)
				}
				res, err := src.Poll(ctx, drv, source)
				if err != nil {
					t.Fatal(err)
				}
				return res, countEvents(t, ctx, st, source)
			}
			drv, err := dialer.DialDriver(ctx, srv.Endpoint("1"), srv.Credentials())
			if err != nil {
				t.Fatal(err)
			}
			logs, err := drv.LogServices(ctx)
			_ = drv.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held := 0
			for _, l := range logs {
				held += len(srv.LogEntries("1", l.LogRef))
			}
			res, n := poll()
			if res.Stored != held || res.Duplicates != 0 || n != held || len(res.Gaps) != 0 {
				t.Fatalf("first poll: %+v, %d stored; want %d stored, no duplicates", res, n, held)
			}
			ref := logs[0].LogRef
			for i := range 3 {
				srv.AddLogEntry("1", ref, bmc.LogEntry{Severity: bmc.SeverityCritical, Message: fmt.Sprintf("new entry %d", i), MessageID: "Test.1.0.New", Type: "Event"})
			}
			res, n = poll() // a new process: the store reopened
			if res.Stored != 3 || res.Duplicates != 0 || n != held+3 || len(res.Gaps) != 0 {
				t.Fatalf("poll after reopening: %+v, %d stored; want 3 stored, no duplicates, %d in all", res, n, held+3)
			}
			res, n = poll()
			if res.Stored != 0 || res.Duplicates != 0 || n != held+3 {
				t.Fatalf("poll with nothing new: %+v, %d stored; want nothing", res, n)
			}
			t.Logf("%d entries polled, 3 added, reopened: 3 stored, 0 duplicates, 0 re-read", held)
		})
	}
}

func countEvents(t *testing.T, ctx context.Context, s storage.Store, source string) int {
	t.Helper()
	recs, err := s.List(ctx, bmcevents.Prefix+source+"/")
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}
