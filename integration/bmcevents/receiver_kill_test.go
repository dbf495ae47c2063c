//go:build linux

package bmcevents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

const envEventsDB = "BMCKIT_BMCEVENTS_TEST_DB"

var killSecret = []byte("bmcevents-integration-secret-0001")

// TestReceiverSIGKILL pushes events from 200 simulated BMCs, each at its
// own pace and retrying like a BMC (the same push, same EventIds, until a
// 2xx), to a receiver in a child process on a bbolt file, and SIGKILLs
// the child 10 times, restarting it on the same file. Some BMCs re-send
// pushes that were already answered 200 (a BMC that lost the answer);
// others push with a wrong token, a bad body or an oversized one. At the
// end the store must hold every acknowledged record exactly once, nothing
// that was not pushed, nothing from a refused push, and every deliberate
// re-send must have been answered as a duplicate.
func TestReceiverSIGKILL(t *testing.T) {
	if childtest.IsChild("bmcevents-receiver") {
		serveReceiver(os.Getenv(envEventsDB))
		return
	}
	const (
		bmcs      = 200
		kills     = 10
		ackPerRun = 300 // acknowledged pushes between two kills
	)
	path := filepath.Join(t.TempDir(), "events.db")
	rcv := &receiverProc{t: t, path: path, changed: make(chan struct{})}
	rcv.start()

	var (
		acks     atomic.Int64 // pushes answered 200
		stop     atomic.Bool
		ackedCh  = make(chan struct{}, 1)
		mu       sync.Mutex
		acked    = map[string]bool{} // source/EventId of every record answered 200
		resent   int                 // records re-sent after a 200
		dupsSeen int                 // of them, answered as duplicates
		refused  = map[int]int{}     // status -> count, for the bad pushes
		badOK    int                 // bad pushes answered 2xx (must stay 0)
		cutDups  int                 // records of retried pushes found stored already
	)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var wg sync.WaitGroup
	for b := range bmcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			source := fmt.Sprintf("bmc-%03d", b)
			pace := time.NewTicker(time.Duration(1+b%13) * time.Millisecond) // each BMC its own pace
			defer pace.Stop()
			for seq := 1; !stop.Load(); seq++ {
				<-pace.C
				n := 1 + (b+seq)%3
				body := payload(seq, n)
				resp := rcv.pushUntilAcked(client, source, body)
				mu.Lock()
				for r := range n {
					acked[fmt.Sprintf("%s/%d.%d", source, seq, r)] = true
				}
				mu.Unlock()
				if acks.Add(1)%10 == 0 {
					select {
					case ackedCh <- struct{}{}:
					default:
					}
				}
				if resp.Duplicates > 0 { // stored by an attempt cut off by a kill
					mu.Lock()
					cutDups += resp.Duplicates
					mu.Unlock()
				}
				if seq%5 == 0 { // the BMC lost the 200 and sends again
					again := rcv.pushUntilAcked(client, source, body)
					mu.Lock()
					resent += n
					dupsSeen += again.Duplicates
					mu.Unlock()
				}
				if b%20 == 7 && seq%3 == 0 { // an attacker or a broken BMC
					st := rcv.pushBad(client, source, seq)
					mu.Lock()
					if st >= 200 && st < 300 {
						badOK++
					}
					refused[st]++
					mu.Unlock()
				}
			}
		}()
	}

	for k := 1; k <= kills; k++ {
		for acks.Load() < int64(k*ackPerRun) {
			<-ackedCh
		}
		rcv.kill()
		rcv.start()
	}
	for acks.Load() < int64((kills+1)*ackPerRun) {
		<-ackedCh
	}
	stop.Store(true)
	wg.Wait()
	rcv.kill()

	s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.List(context.Background(), bmcevents.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	storedN := map[string]int{}
	for _, r := range recs {
		e, err := bmcevents.DecodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(e.ID, "bad") || strings.HasPrefix(e.Source, "evil") {
			t.Errorf("a refused push was stored: %+v", e)
		}
		storedN[e.Source+"/"+e.ID]++
	}
	lost, twice, phantom := 0, 0, 0
	for k := range acked {
		if storedN[k] == 0 {
			lost++
		}
	}
	for k, n := range storedN {
		if n > 1 {
			twice++
		}
		if !acked[k] {
			phantom++
		}
	}
	st := map[int]int{}
	for k, v := range refused {
		st[k] = v
	}
	t.Logf("%d BMCs, %d kills: %d pushes acknowledged (%d records), %d records stored; %d records re-sent after a 200, %d answered as duplicates; %d records of pushes retried after a kill were already stored (dropped); bad pushes by status %v (0: cut off by a kill)",
		bmcs, kills, acks.Load(), len(acked), len(recs), resent, dupsSeen, cutDups, st)
	if lost != 0 || twice != 0 || phantom != 0 || badOK != 0 {
		t.Fatalf("%d acknowledged records lost, %d stored twice, %d stored but never pushed, %d bad pushes answered 2xx", lost, twice, phantom, badOK)
	}
	if dupsSeen != resent {
		t.Fatalf("%d records re-sent after a 200, only %d answered as duplicates", resent, dupsSeen)
	}
	if len(recs) != len(acked) {
		t.Fatalf("%d records stored, %d acknowledged", len(recs), len(acked))
	}
	for _, want := range []int{http.StatusUnauthorized, http.StatusBadRequest, http.StatusRequestEntityTooLarge} {
		if st[want] == 0 {
			t.Errorf("no bad push was answered %d: %v", want, st)
		}
	}
}

// payload is push seq of a BMC: n records with EventIds "seq.0", ....
func payload(seq, n int) []byte {
	type rec struct {
		EventType, EventID, Severity, Message, MessageID, EventTimestamp string
		OriginOfCondition                                                map[string]string
	}
	var p struct {
		ODataType string `json:"@odata.type"`
		ID        string `json:"Id"`
		Events    []rec
	}
	p.ODataType, p.ID = "#Event.v1_7_0.Event", fmt.Sprint(seq)
	for r := range n {
		sev := "OK"
		if (seq+r)%17 == 0 {
			sev = "Critical"
		}
		p.Events = append(p.Events, rec{EventType: "Alert", EventID: fmt.Sprintf("%d.%d", seq, r), Severity: sev,
			Message: fmt.Sprintf("event %d.%d", seq, r), MessageID: "OpenBMC.0.1.Test",
			EventTimestamp:    time.Date(2025, 1, 1, 0, 0, seq%60, 0, time.UTC).Format(time.RFC3339),
			OriginOfCondition: map[string]string{"@odata.id": "/redfish/v1/Systems/1"}})
	}
	b, _ := json.Marshal(p)
	b = bytes.ReplaceAll(b, []byte(`"EventID"`), []byte(`"EventId"`))
	return bytes.ReplaceAll(b, []byte(`"MessageID"`), []byte(`"MessageId"`))
}

// receiverProc is the child running the receiver, restarted on one file.
type receiverProc struct {
	t     *testing.T
	path  string
	child *childtest.Child

	mu      sync.Mutex
	addr    string
	changed chan struct{} // closed when the receiver is replaced
}

func (p *receiverProc) start() {
	c := childtest.Start(p.t, "TestReceiverSIGKILL", "bmcevents-receiver", envEventsDB+"="+p.path)
	var addr string
	select {
	case l, ok := <-c.Lines():
		if !ok || !strings.HasPrefix(l, "addr ") {
			p.t.Fatalf("receiver child said %q", l)
		}
		addr = strings.TrimPrefix(l, "addr ")
	case <-time.After(time.Minute):
		p.t.Fatal("receiver child did not start within a minute")
	}
	p.mu.Lock()
	p.child, p.addr = c, addr
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

func (p *receiverProc) kill() {
	p.mu.Lock()
	c := p.child
	p.mu.Unlock()
	c.Kill()
}

func (p *receiverProc) current() (string, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr, p.changed
}

// pushUntilAcked posts body as a BMC does: again and again until a 2xx.
// After a failure it waits for the next receiver, or 50 ms (a BMC's retry
// interval), whichever comes first.
func (p *receiverProc) pushUntilAcked(client *http.Client, source string, body []byte) bmcevents.Response {
	for attempt := 0; ; attempt++ {
		addr, changed := p.current()
		dest, err := bmcevents.Destination("http://"+addr+"/bmc-events", killSecret, source)
		if err != nil {
			p.t.Error(err)
			return bmcevents.Response{}
		}
		resp, err := client.Post(dest, "application/json", bytes.NewReader(body))
		if err == nil {
			var r bmcevents.Response
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &r) == nil {
				return r
			}
			if resp.StatusCode < 500 {
				p.t.Errorf("%s: push answered %d: %s", source, resp.StatusCode, b)
				return r
			}
		}
		if attempt > 2000 {
			p.t.Errorf("%s: no 2xx after %d attempts: %v", source, attempt, err)
			return bmcevents.Response{}
		}
		select {
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pushBad sends one bad push (which one by seq) and returns the status, 0
// when the connection broke (the receiver was being killed).
func (p *receiverProc) pushBad(client *http.Client, source string, seq int) int {
	addr, _ := p.current()
	dest, _ := bmcevents.Destination("http://"+addr+"/bmc-events", killSecret, source)
	var url string
	var body []byte
	switch (seq / 3) % 3 {
	case 0: // another source's token
		evil, _ := bmcevents.Destination("http://"+addr+"/bmc-events", killSecret, "evil-"+source)
		url = "http://" + addr + "/bmc-events/" + source + evil[strings.LastIndexByte(evil, '/'):]
		body = bytes.ReplaceAll(payload(seq, 1), []byte(`"EventId":"`), []byte(`"EventId":"bad`))
	case 1: // a body that is no event
		url = dest
		body = []byte(`{"Events":[{"EventId":"bad1","Message":{"not":"text"}}]}`)
	default: // oversized
		url = dest
		body = []byte(`{"Events":[{"EventId":"bad2","Message":"` + strings.Repeat("x", bmcevents.DefaultMaxBodyBytes) + `"}]}`)
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// serveReceiver serves the receiver on the bbolt file until killed.
func serveReceiver(path string) {
	s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	rcv, err := bmcevents.NewReceiver(bmcevents.Config{Store: s, Secret: killSecret})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("addr", ln.Addr())
	mux := http.NewServeMux()
	mux.Handle("POST /bmc-events/", rcv)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	time.AfterFunc(5*time.Minute, func() { os.Exit(2) }) // safety net if nobody kills us
	_ = srv.Serve(ln)
}
