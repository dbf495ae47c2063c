package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// failingFeed fails one Changes call, by number.
type failingFeed struct {
	*memstore.Store
	calls, failAt int
}

func (f *failingFeed) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	if f.calls++; f.calls == f.failAt {
		return storage.Changes{}, errors.New("connection reset by peer")
	}
	return f.Store.Changes(ctx, prefix, since, limit)
}

// A feed error after the first page must not lose that page's events.
func TestFollowerReportsEveryEventDespiteMidBatchError(t *testing.T) {
	ctx := context.Background()
	st := &failingFeed{Store: memstore.New()}
	f := storage.NewFollower(st, "jobs/")
	if _, err := f.Next(ctx); err != nil {
		t.Fatal(err)
	}
	n := storage.DefaultChangesLimit + 5
	for i := 0; i < n; i++ {
		if _, err := st.Create(ctx, fmt.Sprintf("jobs/j%05d", i), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	st.calls, st.failAt = 0, 2 // the second page fails
	seen := map[string]bool{}
	for i := 0; i < 4; i++ {
		evs, err := f.Next(ctx)
		if err != nil && len(evs) > 0 {
			t.Fatalf("events returned with an error: %v", err)
		}
		for _, e := range evs {
			seen[e.Key] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("saw %d of %d created keys", len(seen), n)
	}
}
