package storage_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// racingStore runs race once, just before the first Create or Update, to
// play another writer that wins between Modify's read and its write.
type racingStore struct {
	storage.Store
	once sync.Once
	race func()
}

func (s *racingStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	s.once.Do(s.race)
	return s.Store.Create(ctx, key, value)
}

func (s *racingStore) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	s.once.Do(s.race)
	return s.Store.Update(ctx, key, value, rev)
}

// unknownStore applies the first Update and then reports its outcome as
// unknown, as a backend does when the connection breaks around the commit.
type unknownStore struct {
	storage.Store
	once    sync.Once
	getErr  error // returned by Get after the lost answer, when set
	lost    bool
	applied int64
}

func (s *unknownStore) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	var lost bool
	s.once.Do(func() { lost = true })
	if !lost {
		return s.Store.Update(ctx, key, value, rev)
	}
	n, err := s.Store.Update(ctx, key, value, rev)
	if err != nil {
		return 0, err
	}
	s.lost, s.applied = true, n
	return 0, storage.ErrOutcomeUnknown
}

func (s *unknownStore) Get(ctx context.Context, key string) (storage.Record, error) {
	if s.lost && s.getErr != nil {
		return storage.Record{}, s.getErr
	}
	return s.Store.Get(ctx, key)
}

// conflictStore fails every Update with ErrConflict and ignores ctx: a key
// someone rewrites forever.
type conflictStore struct{ storage.Store }

func (conflictStore) Update(context.Context, string, []byte, int64) (int64, error) {
	return 0, storage.ErrConflict
}

// brokenStore fails every Get with a connection error.
type brokenStore struct{ storage.Store }

var errBroken = errors.New("connection refused")

func (brokenStore) Get(context.Context, string) (storage.Record, error) {
	return storage.Record{}, errBroken
}

// set returns a ModifyFunc that writes v and records every value it saw
// ("<nil>" for an absent key).
func set(v string, seen *[]string) storage.ModifyFunc {
	return func(cur *storage.Record) ([]byte, error) {
		if cur == nil {
			*seen = append(*seen, "<nil>")
		} else {
			*seen = append(*seen, string(cur.Value))
		}
		return []byte(v), nil
	}
}

func mustGet(t *testing.T, s storage.Store, key string) storage.Record {
	t.Helper()
	r, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return r
}

func TestModifyCreatesWhenAbsent(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	var seen []string
	rec, err := storage.Modify(ctx, s, "k", set("v1", &seen))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "<nil>" {
		t.Fatalf("fn saw %q, want a nil record", seen)
	}
	got := mustGet(t, s, "k")
	if rec.Key != "k" || string(rec.Value) != "v1" || rec.Revision != got.Revision || string(got.Value) != "v1" {
		t.Fatalf("Modify returned %+v, store holds %+v", rec, got)
	}
}

func TestModifyUpdates(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	rev, _ := s.Create(ctx, "k", []byte("v1"))
	var seen []string
	rec, err := storage.Modify(ctx, s, "k", set("v2", &seen))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "v1" {
		t.Fatalf("fn saw %q, want v1", seen)
	}
	got := mustGet(t, s, "k")
	if rec.Revision <= rev || rec.Revision != got.Revision || string(got.Value) != "v2" || string(rec.Value) != "v2" {
		t.Fatalf("Modify returned %+v, store holds %+v (old revision %d)", rec, got, rev)
	}
}

func TestModifyNoChangeWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	noChange := func(*storage.Record) ([]byte, error) { return nil, storage.ErrNoChange }

	rec, err := storage.Modify(ctx, s, "absent", noChange)
	if err != nil || rec.Key != "" || rec.Value != nil || rec.Revision != 0 {
		t.Fatalf("Modify on an absent key = %+v, %v; want a zero Record and nil", rec, err)
	}
	if _, err := s.Get(ctx, "absent"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("absent key was written: %v", err)
	}

	rev, _ := s.Create(ctx, "k", []byte("v1"))
	rec, err = storage.Modify(ctx, s, "k", noChange)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Revision != rev || string(rec.Value) != "v1" || rec.Key != "k" {
		t.Fatalf("Modify = %+v, want the current record at revision %d", rec, rev)
	}
	if got := mustGet(t, s, "k"); got.Revision != rev {
		t.Fatalf("revision moved from %d to %d", rev, got.Revision)
	}
}

// TestModifyRetriesWhenTheRecordChanged covers each way a write loses to
// another writer between Modify's read and its write.
func TestModifyRetriesWhenTheRecordChanged(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(s storage.Store) // before Modify
		race  func(s storage.Store) // between Modify's read and write
		want  string                // what fn saw, call by call
	}{
		{
			name:  "conflict",
			setup: func(s storage.Store) { _, _ = s.Create(ctx, "k", []byte("v1")) },
			race: func(s storage.Store) {
				r, _ := s.Get(ctx, "k")
				_, _ = s.Update(ctx, "k", []byte("theirs"), r.Revision)
			},
			want: "v1,theirs",
		},
		{
			name:  "exists",
			setup: func(storage.Store) {},
			race:  func(s storage.Store) { _, _ = s.Create(ctx, "k", []byte("theirs")) },
			want:  "<nil>,theirs",
		},
		{
			name:  "deleted",
			setup: func(s storage.Store) { _, _ = s.Create(ctx, "k", []byte("v1")) },
			race:  func(s storage.Store) { _ = s.Delete(ctx, "k", 0) },
			want:  "v1,<nil>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memstore.New()
			tt.setup(mem)
			s := &racingStore{Store: mem, race: func() { tt.race(mem) }}
			var seen []string
			rec, err := storage.Modify(ctx, s, "k", set("mine", &seen))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(seen, ","); got != tt.want {
				t.Fatalf("fn saw %s, want %s", got, tt.want)
			}
			if got := mustGet(t, mem, "k"); string(got.Value) != "mine" || got.Revision != rec.Revision {
				t.Fatalf("store holds %+v, Modify returned %+v", got, rec)
			}
		})
	}
}

func TestModifyRereadsAfterOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	_, _ = mem.Create(ctx, "k", []byte("v1"))
	s := &unknownStore{Store: mem}
	var seen []string
	// Idempotent: a record already "done" needs no write.
	rec, err := storage.Modify(ctx, s, "k", func(cur *storage.Record) ([]byte, error) {
		seen = append(seen, string(cur.Value))
		if string(cur.Value) == "done" {
			return nil, storage.ErrNoChange
		}
		return []byte("done"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, ","); got != "v1,done" {
		t.Fatalf("fn saw %s, want v1 then the applied value", got)
	}
	if rec.Revision != s.applied || string(rec.Value) != "done" {
		t.Fatalf("Modify = %+v, want the applied write at revision %d", rec, s.applied)
	}
	if got := mustGet(t, mem, "k"); got.Revision != s.applied {
		t.Fatalf("store revision %d, want %d (one write)", got.Revision, s.applied)
	}
}

func TestModifyOutcomeUnknownThenRereadFails(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	_, _ = mem.Create(ctx, "k", []byte("v1"))
	s := &unknownStore{Store: mem, getErr: errBroken}
	var seen []string
	_, err := storage.Modify(ctx, s, "k", set("v2", &seen))
	if !errors.Is(err, storage.ErrOutcomeUnknown) || !errors.Is(err, errBroken) {
		t.Fatalf("error = %v, want ErrOutcomeUnknown and the read error", err)
	}
}

func TestModifyReturnsFnErrorAsIs(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	rev, _ := s.Create(ctx, "k", []byte("v1"))
	errMine := errors.New("not allowed")
	_, err := storage.Modify(ctx, s, "k", func(*storage.Record) ([]byte, error) { return nil, errMine })
	if err != errMine {
		t.Fatalf("error = %v, want fn's error unwrapped", err)
	}
	if got := mustGet(t, s, "k"); got.Revision != rev {
		t.Fatalf("revision moved from %d to %d", rev, got.Revision)
	}
}

func TestModifyReturnsStoreErrorsAtOnce(t *testing.T) {
	ctx := context.Background()
	calls := 0
	_, err := storage.Modify(ctx, brokenStore{memstore.New()}, "k", func(*storage.Record) ([]byte, error) {
		calls++
		return []byte("v"), nil
	})
	if !errors.Is(err, errBroken) || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("error = %v, want the store's error naming the key", err)
	}
	if calls != 0 {
		t.Fatalf("fn called %d times after a failed read", calls)
	}

	_, err = storage.Modify(ctx, memstore.New(), "k", func(*storage.Record) ([]byte, error) {
		return make([]byte, storage.MaxValueSize+1), nil
	})
	if !errors.Is(err, storage.ErrValueTooLarge) {
		t.Fatalf("error = %v, want ErrValueTooLarge", err)
	}
}

func TestModifyEndsWithCtx(t *testing.T) {
	mem := memstore.New()
	_, _ = mem.Create(context.Background(), "k", []byte("v1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	_, err := storage.Modify(ctx, conflictStore{mem}, "k", func(*storage.Record) ([]byte, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return []byte("v2"), nil
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("error = %v, want context.Canceled and the last conflict", err)
	}
	if calls != 3 {
		t.Fatalf("fn called %d times, want 3", calls)
	}

	// A ctx that ended before the call fails it in the store.
	_, err = storage.Modify(ctx, mem, "k", func(*storage.Record) ([]byte, error) {
		t.Fatal("fn called with an ended ctx")
		return nil, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestModifyConcurrentIncrements(t *testing.T) {
	const workers, each = 20, 50
	ctx := context.Background()
	s := memstore.New()
	incr := func(cur *storage.Record) ([]byte, error) {
		n := 0
		if cur != nil {
			var err error
			if n, err = strconv.Atoi(string(cur.Value)); err != nil {
				return nil, err
			}
		}
		return []byte(strconv.Itoa(n + 1)), nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := storage.Modify(ctx, s, "counter", incr); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := string(mustGet(t, s, "counter").Value); got != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s, want %d", got, workers*each)
	}
}
