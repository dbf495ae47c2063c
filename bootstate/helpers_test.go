package bootstate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

var (
	testSecret = []byte("0123456789abcdef-test-secret")
	t0         = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

const (
	uuidA = "4c4c4544-0042-4a10-8031-b2c04f4e4a31"
	uuidB = "4c4c4544-0042-4a10-8031-b2c04f4e4a32"
)

// logBuffer collects every log line, for checks that secrets never appear.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		fmt.Fprintln(&l.buf, prefix, args)
	}, funcr.Options{Verbosity: 10})
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type env struct {
	store *memstore.Store
	clock *clock.Fake
	logs  *logBuffer
	tr    *bootstate.Tracker
}

func newEnv(t *testing.T, mod func(*bootstate.Config)) *env {
	t.Helper()
	e := &env{store: memstore.New(), clock: clock.NewFake(t0), logs: &logBuffer{}}
	cfg := bootstate.Config{Store: e.store, Clock: e.clock, Logger: e.logs.logger(), Secret: testSecret}
	if mod != nil {
		mod(&cfg)
	}
	if cfg.Store == nil {
		cfg.Store = e.store
	}
	tr, err := bootstate.NewTracker(cfg)
	if err != nil {
		t.Fatalf("NewTracker: %v", err)
	}
	e.tr = tr
	return e
}

// snapshot returns every stored key with its revision, to prove that a
// rejected request wrote nothing.
func snapshot(t *testing.T, s storage.Store) map[string]int64 {
	t.Helper()
	recs, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	out := map[string]int64{}
	for _, r := range recs {
		out[r.Key] = r.Revision
	}
	return out
}

// dump returns every stored value, concatenated.
func dump(t *testing.T, s storage.Store) string {
	t.Helper()
	recs, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(r.Key)
		b.Write(r.Value)
	}
	return b.String()
}

// failingStore wraps a Store and fails every call while broken is set.
type failingStore struct {
	storage.Store
	broken atomic.Bool
}

var errBroken = errors.New("disk on fire")

func (f *failingStore) Get(ctx context.Context, key string) (storage.Record, error) {
	if f.broken.Load() {
		return storage.Record{}, errBroken
	}
	return f.Store.Get(ctx, key)
}

func (f *failingStore) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	if f.broken.Load() {
		return 0, errBroken
	}
	return f.Store.Update(ctx, key, value, rev)
}

func (f *failingStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if f.broken.Load() {
		return 0, errBroken
	}
	return f.Store.Create(ctx, key, value)
}

// failWritesStore fails only writes while broken is set (reads work), the
// harder case: the handler gets as far as the write.
type failWritesStore struct {
	storage.Store
	broken atomic.Bool
}

func (f *failWritesStore) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	if f.broken.Load() {
		return 0, errBroken
	}
	return f.Store.Update(ctx, key, value, rev)
}

// mustStart opens an attempt or fails the test.
func mustStart(t *testing.T, tr *bootstate.Tracker, opts bootstate.StartOptions) bootstate.Record {
	t.Helper()
	rec, err := tr.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start(%+v): %v", opts, err)
	}
	return rec
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// assertUnchanged fails if any stored key was written since before.
func assertUnchanged(t *testing.T, s storage.Store, before map[string]int64) {
	t.Helper()
	after := snapshot(t, s)
	if len(after) != len(before) {
		t.Fatalf("keys changed: %v -> %v", before, after)
	}
	for k, rev := range before {
		if after[k] != rev {
			t.Fatalf("%s was written (revision %d -> %d)", k, rev, after[k])
		}
	}
}
