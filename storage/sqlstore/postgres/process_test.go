//go:build linux

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/storagetest/childtest"
)

const (
	envSchema = "BMCKIT_SQLSTORE_TEST_SCHEMA"
	envGo     = "BMCKIT_SQLSTORE_TEST_GO_FILE"
)

func childStore() *sqlstore.Store {
	s, err := postgres.Open(context.Background(), os.Getenv(envDSN), postgres.Options{Store: sqlstore.Options{Schema: os.Getenv(envSchema)}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	return s
}

// TestCrashDurability SIGKILLs a child process that writes records and
// prints an acknowledgement after each write returns, then opens the store
// again and finds every acknowledged record.
func TestCrashDurability(t *testing.T) {
	if childtest.IsChild("sql-writer") {
		childtest.WriteAcked(childStore())
		return
	}
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	openStore(t, dsn, schema) // migrate before the child starts
	child := childtest.Start(t, "TestCrashDurability", "sql-writer", envSchema+"="+schema)
	acked := child.KillAfterAcks(t, 100)
	s := openStore(t, dsn, schema)
	ctx := context.Background()
	for key, rev := range acked {
		r, err := s.Get(ctx, key)
		if err != nil {
			t.Fatalf("acknowledged record %s (revision %d) lost after SIGKILL: %v", key, rev, err)
		}
		if r.Revision != rev || string(r.Value) != key+" payload" {
			t.Fatalf("acknowledged record %s: got revision %d value %q, acknowledged revision %d", key, r.Revision, r.Value, rev)
		}
	}
	t.Logf("all %d acknowledged records survived SIGKILL", len(acked))
}

const (
	raceKeys    = 3
	racePerKey  = 30
	raceWorkers = 2
)

// TestTwoProcessesCompareAndSwap runs two OS processes that increment the
// same counters with Get + Update (compare-and-swap) on one database. No
// update may be lost: each counter ends at the number of increments that
// succeeded across both processes.
func TestTwoProcessesCompareAndSwap(t *testing.T) {
	if childtest.IsChild("sql-incrementer") {
		s := childStore()
		ctx := context.Background()
		// Start together: report ready, then wait for the parent's go file.
		fmt.Println("ready")
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(os.Getenv(envGo)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Println("error: no go signal from the parent")
				os.Exit(1)
			}
		}
		conflicts := 0
		for i := range racePerKey * raceKeys {
			key := fmt.Sprintf("counter/%d", i%raceKeys)
			for {
				r, err := s.Get(ctx, key)
				if err != nil {
					fmt.Println("error", err)
					os.Exit(1)
				}
				n, _ := strconv.Atoi(string(r.Value))
				_, err = s.Update(ctx, key, []byte(strconv.Itoa(n+1)), r.Revision)
				if errors.Is(err, storage.ErrConflict) {
					conflicts++
					continue
				}
				if err != nil {
					fmt.Println("error", err)
					os.Exit(1)
				}
				break
			}
		}
		fmt.Printf("done %d %d\n", racePerKey*raceKeys, conflicts)
		os.Exit(0)
	}
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	s := openStore(t, dsn, schema)
	ctx := context.Background()
	for k := range raceKeys {
		if _, err := s.Create(ctx, fmt.Sprintf("counter/%d", k), []byte("0")); err != nil {
			t.Fatal(err)
		}
	}
	goFile := filepath.Join(t.TempDir(), "go")
	var children []*childtest.Child
	for range raceWorkers {
		children = append(children, childtest.Start(t, "TestTwoProcessesCompareAndSwap", "sql-incrementer",
			envSchema+"="+schema, envGo+"="+goFile))
	}
	for i, c := range children {
		select {
		case l, ok := <-c.Lines():
			if !ok || l != "ready" {
				t.Fatalf("child %d: %q instead of ready", i, l)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("child %d not ready after 2 minutes", i)
		}
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	succeeded, conflicts := 0, 0
	for i, c := range children {
		lines, err := c.Wait()
		if err != nil {
			t.Fatalf("child %d: %v (output %q)", i, err, lines)
		}
		done := false
		for _, l := range lines {
			var ok, conf int
			if _, err := fmt.Sscanf(l, "done %d %d", &ok, &conf); err == nil {
				succeeded, conflicts, done = succeeded+ok, conflicts+conf, true
			}
		}
		if !done {
			t.Fatalf("child %d did not report: %q", i, lines)
		}
	}
	total := 0
	for k := range raceKeys {
		r, err := s.Get(ctx, fmt.Sprintf("counter/%d", k))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(string(r.Value))
		if n != raceWorkers*racePerKey {
			t.Errorf("counter/%d = %d, want %d: lost updates", k, n, raceWorkers*racePerKey)
		}
		total += n
	}
	if total != succeeded {
		t.Fatalf("counters sum to %d, processes report %d successful increments", total, succeeded)
	}
	t.Logf("%d increments from %d processes, %d CAS conflicts retried, none lost", succeeded, raceWorkers, conflicts)
}
