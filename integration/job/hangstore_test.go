package job_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// hangStore wraps a Store (and its change feed) so that, on command, every
// call made during a hang blocks until the hang ends: a database that stops
// answering without failing (a network partition, a stalled primary). A
// blocked call still ends when its ctx does, as a driver's query does.
// Calls already in flight when a hang begins are not held back.
type hangStore struct {
	s    storage.Store
	feed storage.ChangeFeed // nil if s has none

	mu   sync.Mutex
	gate chan struct{} // closed when the current hang ends; nil: no hang
}

func newHangStore(s storage.Store) *hangStore {
	h := &hangStore{s: s}
	h.feed, _ = s.(storage.ChangeFeed)
	return h
}

// hang blocks every call from now on for d. It returns when the hang began
// and a channel that delivers when it ended.
func (h *hangStore) hang(d time.Duration) (began time.Time, ended <-chan time.Time) {
	gate := make(chan struct{})
	h.mu.Lock()
	h.gate = gate
	began = time.Now()
	h.mu.Unlock()
	end := make(chan time.Time, 1)
	time.AfterFunc(d, func() {
		h.mu.Lock()
		h.gate = nil
		t := time.Now()
		h.mu.Unlock()
		close(gate)
		end <- t
	})
	return began, end
}

func (h *hangStore) wait(ctx context.Context) error {
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *hangStore) Get(ctx context.Context, key string) (storage.Record, error) {
	if err := h.wait(ctx); err != nil {
		return storage.Record{}, err
	}
	return h.s.Get(ctx, key)
}

func (h *hangStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := h.wait(ctx); err != nil {
		return 0, err
	}
	return h.s.Create(ctx, key, value)
}

func (h *hangStore) Update(ctx context.Context, key string, value []byte, revision int64) (int64, error) {
	if err := h.wait(ctx); err != nil {
		return 0, err
	}
	return h.s.Update(ctx, key, value, revision)
}

func (h *hangStore) Delete(ctx context.Context, key string, revision int64) error {
	if err := h.wait(ctx); err != nil {
		return err
	}
	return h.s.Delete(ctx, key, revision)
}

func (h *hangStore) List(ctx context.Context, prefix string) ([]storage.Record, error) {
	if err := h.wait(ctx); err != nil {
		return nil, err
	}
	return h.s.List(ctx, prefix)
}

// Changes passes the change feed through (the Runner would list every job
// on every scan without it).
func (h *hangStore) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	if h.feed == nil {
		return storage.Changes{}, errors.New("hangStore: the wrapped store has no change feed")
	}
	if err := h.wait(ctx); err != nil {
		return storage.Changes{}, err
	}
	return h.feed.Changes(ctx, prefix, since, limit)
}

var (
	_ storage.Store      = (*hangStore)(nil)
	_ storage.ChangeFeed = (*hangStore)(nil)
)

// A hang blocks calls (not fails them) until it ends, or until the call's
// ctx ends; before and after it calls go through.
func TestHangStore(t *testing.T) {
	ctx := context.Background()
	h := newHangStore(memstore.New())
	rev, err := h.Create(ctx, "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	began, ended := h.hang(200 * time.Millisecond)
	got := make(chan error, 1)
	go func() {
		_, err := h.Get(ctx, "k")
		got <- err
	}()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := h.Changes(short, "", 0, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call whose ctx ends during the hang: %v, want the ctx's error", err)
	}
	select {
	case err := <-got:
		t.Fatalf("Get returned during the hang: %v", err)
	default:
	}
	end := <-ended
	if err := <-got; err != nil {
		t.Fatalf("Get after the hang: %v", err)
	}
	if d := end.Sub(began); d < 200*time.Millisecond {
		t.Fatalf("hang lasted %v", d)
	}
	if _, err := h.Update(ctx, "k", []byte("w"), rev); err != nil {
		t.Fatalf("Update after the hang: %v", err)
	}
}
