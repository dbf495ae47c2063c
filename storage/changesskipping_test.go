package storage_test

import (
	"context"
	"testing"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// feedOnly hides every capability of a store but its change feed.
type feedOnly struct{ f storage.ChangeFeed }

func (f feedOnly) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	return f.f.Changes(ctx, prefix, since, limit)
}

// storage.ChangesSkipping gives the same result over a feed with and
// without ValueSkipper: the asked-for values left out, the others there.
func TestChangesSkippingHelper(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	for _, k := range []string{"p/a", "p/b", "p/c"} {
		if _, err := s.Create(ctx, k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "p/c", 0); err != nil {
		t.Fatal(err)
	}
	skipB := func(key string, _ int64) bool { return key == "p/b" || key == "p/c" }
	for name, feed := range map[string]storage.ChangeFeed{"ValueSkipper": s, "Changes only": feedOnly{s}} {
		ch, err := storage.ChangesSkipping(ctx, feed, "p/", 0, 0, skipB)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ch.Events) != 3 {
			t.Fatalf("%s: %d events, want 3: %+v", name, len(ch.Events), ch.Events)
		}
		a, b, c := ch.Events[0], ch.Events[1], ch.Events[2]
		if a.Key != "p/a" || string(a.Value) != "v-p/a" {
			t.Errorf("%s: p/a event %q=%q, want its value", name, a.Key, a.Value)
		}
		if b.Key != "p/b" || b.Type != storage.EventPut || b.Value != nil {
			t.Errorf("%s: p/b event %s %q=%q, want a put without value", name, b.Type, b.Key, b.Value)
		}
		if c.Key != "p/c" || c.Type != storage.EventDelete {
			t.Errorf("%s: p/c event %s %q, want its delete", name, c.Type, c.Key)
		}
	}
}
