package bootstate_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// countingWritesStore fails writes while broken is set and counts the
// failures, so a test can tell that a write was attempted.
type countingWritesStore struct {
	storage.Store
	broken atomic.Bool
	failed atomic.Int64
}

func (f *countingWritesStore) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	if f.broken.Load() {
		f.failed.Add(1)
		return 0, errBroken
	}
	return f.Store.Update(ctx, key, value, rev)
}

// A deadline whose timeout write failed (a store blip) is retried by Run,
// not dropped: OnTimeout fires once the store is back.
func TestRunRetriesDeadlineAfterStoreError(t *testing.T) {
	fired := make(chan bootstate.Record, 1)
	fs := &countingWritesStore{Store: memstore.New()}
	e := newEnv(t, func(c *bootstate.Config) {
		c.Store = fs
		c.ResyncInterval = time.Hour // only the retry can bring the deadline back
		c.OnTimeout = func(_ context.Context, r bootstate.Record) { fired <- r }
	})
	mustStart(t, e.tr, bootstate.StartOptions{SystemUUID: uuidA, AttemptID: "a", Timeout: 5 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = e.tr.Run(ctx) }()
	defer func() { cancel(); <-done }()

	fs.broken.Store(true)
	advanceUntil(t, e, time.Minute, func() bool { return fs.failed.Load() > 0 })
	fs.broken.Store(false)
	var rec bootstate.Record
	advanceUntil(t, e, time.Second, func() bool {
		select {
		case rec = <-fired:
			return true
		default:
			return false
		}
	})
	if rec.SystemUUID != uuidA {
		t.Fatalf("OnTimeout for %q, want %q", rec.SystemUUID, uuidA)
	}
	got, err := e.tr.Get(context.Background(), uuidA)
	if err != nil || !got.Completed() {
		t.Fatalf("record not completed after the retry: %+v %v", got, err)
	}
}
