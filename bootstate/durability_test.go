//go:build linux

package bootstate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

const envBootDB = "BMCKIT_BOOTSTATE_TEST_DB"

// TestDurabilityAcrossSIGKILL runs the /bootstate handler on boltstore in a
// child process, posts callbacks from several clients, SIGKILLs the child
// right after one of them got a 200, restarts it, and checks that every
// callback answered 200 is in the store and none answered with an error is.
// Callbacks whose connection broke when the child died got no answer: the
// caller cannot know and must retry, so either outcome is allowed for them.
func TestDurabilityAcrossSIGKILL(t *testing.T) {
	if childtest.IsChild("bootstate-server") {
		serveChild(os.Getenv(envBootDB))
		return
	}
	const systems = 400
	path := filepath.Join(t.TempDir(), "boot.db")
	ctx := context.Background()

	// Open one attempt per system, as jobs would before powering on.
	uuids := make([]string, systems)
	func() {
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		tr := durableTracker(t, s)
		for i := range uuids {
			uuids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			if i%5 == 3 { // these get a late callback from attempt-1
				if err := tr.StartBoot(ctx, uuids[i], "attempt-1", time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			if err := tr.StartBoot(ctx, uuids[i], "attempt-2", time.Hour); err != nil {
				t.Fatal(err)
			}
		}
	}()
	sign, err := bootstate.NewTracker(bootstate.Config{Store: memstore.New(), Secret: testSecret}) // computes tokens
	if err != nil {
		t.Fatal(err)
	}

	child := childtest.Start(t, "TestDurabilityAcrossSIGKILL", "bootstate-server", envBootDB+"="+path)
	addr := childAddr(t, child)

	// Every fifth system gets a bad callback instead: wrong token or an
	// older attempt. Those must answer 4xx and never be recorded.
	type result struct {
		uuid   string
		status int // 0: no answer (connection broke)
	}
	var (
		mu      sync.Mutex
		results []result
		killed  = make(chan struct{})
		once    sync.Once
		okCount int
	)
	client := &http.Client{Timeout: 30 * time.Second}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				u := uuids[i]
				attempt := "attempt-2"
				tok, _ := sign.Token(u, attempt)
				switch i % 5 {
				case 1:
					tok = tok[:len(tok)-2] + "AA"
				case 3:
					attempt = "attempt-1"
					tok, _ = sign.Token(u, attempt)
				}
				body, _ := json.Marshal(bootstate.Request{SystemUUID: u, AttemptID: attempt, Token: tok})
				st := 0
				resp, err := client.Post("http://"+addr+"/bootstate", "application/json", bytes.NewReader(body))
				if err == nil {
					st = resp.StatusCode
					resp.Body.Close()
				}
				mu.Lock()
				results = append(results, result{u, st})
				if st == http.StatusOK {
					okCount++
				}
				n := okCount
				mu.Unlock()
				if st == http.StatusOK && n == 120 {
					once.Do(func() { child.Kill(); close(killed) }) // right after a 200
				}
			}
		}()
	}
feed:
	for i := range uuids {
		select {
		case work <- i:
		case <-killed:
			break feed
		}
	}
	close(work)
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("only %d callbacks got a 200 before the systems ran out; the kill never happened", okCount)
	}

	// Restart on the same file: the server comes back and serves.
	child2 := childtest.Start(t, "TestDurabilityAcrossSIGKILL", "bootstate-server", envBootDB+"="+path)
	addr2 := childAddr(t, child2)
	last := uuids[systems-1]
	tok, _ := sign.Token(last, "attempt-2")
	body, _ := json.Marshal(bootstate.Request{SystemUUID: last, AttemptID: "attempt-2", Token: tok})
	resp, err := client.Post("http://"+addr2+"/bootstate", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("restarted server: %v %v", resp, err)
	}
	resp.Body.Close()
	child2.Kill()

	s := openBolt(t, path)
	tr := durableTracker(t, s)
	var ok, rejected, noAnswer int
	byStatus := map[int]int{}
	for _, r := range results {
		rec, err := tr.Get(ctx, r.uuid)
		if err != nil {
			t.Fatalf("%s: %v", r.uuid, err)
		}
		got := rec.HasSignal(bootstate.SignalBootStateReceived)
		switch {
		case r.status == http.StatusOK:
			ok++
			if !got {
				t.Errorf("%s answered 200 but its signal is not in the store after SIGKILL", r.uuid)
			}
		case r.status == 0:
			noAnswer++
		default:
			rejected++
			byStatus[r.status]++
			if r.status != http.StatusUnauthorized && r.status != http.StatusConflict {
				// 401 for the wrong tokens, 409 for attempt-1's replays.
				t.Errorf("%s: status %d, want 401 or 409", r.uuid, r.status)
			}
			if got {
				t.Errorf("%s answered %d but its signal is in the store", r.uuid, r.status)
			}
		}
	}
	if ok < 120 || byStatus[http.StatusUnauthorized] == 0 || byStatus[http.StatusConflict] == 0 {
		t.Fatalf("ok %d, rejected %v: the test did not exercise every path", ok, byStatus)
	}
	t.Logf("after SIGKILL: %d callbacks answered 200 all durable, %d rejected none recorded, %d cut off without an answer", ok, rejected, noAnswer)
}

// serveChild serves /bootstate on boltstore until killed, printing its
// address.
func serveChild(path string) {
	s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	tr, err := bootstate.NewTracker(bootstate.Config{Store: s, Secret: testSecret})
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
	srv := &http.Server{Handler: bootstate.NewHandler(tr, bootstate.HandlerConfig{}), ReadHeaderTimeout: 10 * time.Second}
	time.AfterFunc(2*time.Minute, func() { os.Exit(2) }) // safety net if nobody kills us
	_ = srv.Serve(ln)
}

func childAddr(t *testing.T, c *childtest.Child) string {
	t.Helper()
	select {
	case l, ok := <-c.Lines():
		if !ok || !strings.HasPrefix(l, "addr ") {
			t.Fatalf("child said %q", l)
		}
		return strings.TrimPrefix(l, "addr ")
	case <-time.After(time.Minute):
		t.Fatal("child did not start within a minute")
	}
	return ""
}

func openBolt(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func durableTracker(t *testing.T, s *boltstore.Store) *bootstate.Tracker {
	t.Helper()
	tr, err := bootstate.NewTracker(bootstate.Config{Store: s, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
