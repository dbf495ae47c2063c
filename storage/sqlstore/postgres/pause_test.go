//go:build linux

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

const (
	envAppName = "BMCKIT_SQLSTORE_TEST_APP_NAME"
	// pausedIdleTimeout is the paused writer's
	// Options.IdleInTransactionTimeout: long enough for the parent to see
	// its session idle in a transaction, short enough for a quick test.
	pausedIdleTimeout = 2 * time.Second
	pausedWriters     = 8
	pausedTries       = 1000
	pausedAcksAfter   = 200 // acknowledged writes the child makes after it resumed
)

// pausedWriterChild writes new keys from pausedWriters goroutines, so that
// group commits run in shared transactions most of the time, and prints
// "ack <key> <revision>" after each write that returned success (or that
// reported storage.ErrOutcomeUnknown and is found stored: "unknown <key>
// landed"; one not found, "unknown <key> absent", is written again). Any
// other error ends it with "error ...". It stops writing on "stop" and
// prints "stopped".
func pausedWriterChild() {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := postgres.Open(ctx, pgtest.WithAppName(os.Getenv(envDSN), os.Getenv(envAppName)), postgres.Options{Store: sqlstore.Options{
		Schema: os.Getenv(envSchema), IdleInTransactionTimeout: pausedIdleTimeout,
	}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	var wg sync.WaitGroup
	for g := range pausedWriters {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("w%d/%d", g, i)
				rev, err := s.Create(ctx, key, []byte(key))
				if errors.Is(err, storage.ErrOutcomeUnknown) && ctx.Err() == nil {
					r, gerr := s.Get(ctx, key)
					switch {
					case gerr == nil:
						say("unknown %s landed", key)
						rev, err = r.Revision, nil
					case errors.Is(gerr, storage.ErrNotFound):
						say("unknown %s absent", key)
						i-- // write it again
						continue
					default:
						err = gerr
					}
				}
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					say("error %s: %v", key, err)
					os.Exit(1)
				}
				say("ack %s %d", key, rev)
			}
		})
	}
	for c := range childtest.Commands() {
		if c == "stop" {
			break
		}
	}
	cancel()
	wg.Wait()
	say("stopped")
	os.Exit(0)
}

// TestPausedWriterDoesNotStallOthers: a process paused (SIGSTOP) inside one
// of the store's transactions holds the revision counter's row lock, which
// every write of every process sharing the store needs. With
// Options.IdleInTransactionTimeout PostgreSQL ends the paused session, so
// another process's write goes through while the first is still stopped
// (without it, that write waits for the SIGCONT: this test's 60-second
// deadline fails it). When the paused process resumes, its writes go on:
// what it acknowledged is stored, and a write whose COMMIT was cut off is
// reported as storage.ErrOutcomeUnknown, not as a success or a failure.
func TestPausedWriterDoesNotStallOthers(t *testing.T) {
	if childtest.IsChild("sql-paused-writer") {
		pausedWriterChild()
		return
	}
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	s := openStore(t, dsn, schema)
	ctx := context.Background()
	app := "bmckit-paused-" + strconv.Itoa(os.Getpid())
	child := childtest.Start(t, "TestPausedWriterDoesNotStallOthers", "sql-paused-writer",
		envSchema+"="+schema, envAppName+"="+app)

	acked := map[string]int64{}
	var unknownLanded, unknownAbsent int
	// take records one of the child's lines: it reports whether the line
	// was an ack, and false in known when it is none of the child's lines.
	take := func(l string) (ack, known bool) {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "ack":
			rev, _ := strconv.ParseInt(f[2], 10, 64)
			acked[f[1]] = rev
			return true, true
		case len(f) == 3 && f[0] == "unknown" && f[2] == "landed":
			unknownLanded++
		case len(f) == 3 && f[0] == "unknown" && f[2] == "absent":
			unknownAbsent++
		default:
			return false, false
		}
		return false, true
	}
	// next reads the child's lines until an ack.
	next := func(what string) {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		for {
			select {
			case l, ok := <-child.Lines():
				if !ok {
					t.Fatalf("%s: the child exited", what)
				}
				ack, known := take(l)
				if !known {
					t.Fatalf("%s: child: %s", what, l)
				}
				if ack {
					return
				}
			case <-deadline:
				t.Fatalf("%s: no write acknowledged by the child in 2 minutes", what)
			}
		}
	}
	// idleInTx counts the child's sessions idle inside a transaction that
	// has written: it holds the revision counter's row lock (every write
	// updates that row first).
	idleInTx := func() int {
		t.Helper()
		n, err := pgtest.IdleInWriteTransaction(ctx, s.DB(), app, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	next("first write")
	var tries int
	for tries = 1; ; tries++ {
		if tries > pausedTries {
			t.Fatalf("in %d pauses the child was never stopped inside a transaction that had written", pausedTries)
		}
		next("before a pause")
		if err := child.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if idleInTx() > 0 {
			break
		}
		if err := child.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	// The child is stopped inside a transaction that holds the counter's
	// row lock. Another process's write must go through all the same.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, err := s.Create(wctx, "other/while-paused", []byte("x"))
	cancel()
	if err != nil {
		t.Fatalf("a write while the other process is paused inside a transaction: %v (want it through after %v, when PostgreSQL ends the paused session)", err, pausedIdleTimeout)
	}
	if n := idleInTx(); n != 0 {
		t.Errorf("the paused child still has %d sessions idle in a transaction that wrote, after another process's write went through", n)
	}
	if err := child.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	before := len(acked)
	for range pausedAcksAfter {
		next("after the child resumed")
	}
	if err := child.Send("stop"); err != nil {
		t.Fatal(err)
	}
	rest, err := child.Wait()
	if err != nil || len(rest) == 0 || rest[len(rest)-1] != "stopped" {
		t.Fatalf("child: %v, last lines %q", err, rest)
	}
	for _, l := range rest[:len(rest)-1] {
		if _, known := take(l); !known {
			t.Errorf("child: %s", l)
		}
	}
	for key, rev := range acked {
		r, err := s.Get(ctx, key)
		if err != nil || r.Revision != rev || string(r.Value) != key {
			t.Errorf("acknowledged %s (revision %d): got %+v, %v", key, rev, r, err)
		}
	}
	t.Logf("paused inside a transaction holding the counter's lock at try %d; another process's write went through while it was stopped; "+
		"%d writes acknowledged (%d after it resumed), outcome unknown then found stored %d, not stored (written again) %d",
		tries, len(acked), len(acked)-before, unknownLanded, unknownAbsent)
}
