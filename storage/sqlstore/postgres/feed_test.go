package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/storage"
)

// TestFeedAcrossStores follows the change feed through one store while two
// other stores on the same schema (separate connection pools, as separate
// processes would have) write concurrently. Revisions must become visible in
// order, or the reader's cursor would pass a change that commits later and
// the reader's view would differ from List at the end.
func TestFeedAcrossStores(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	ctx := context.Background()
	writers := []storage.Store{openStore(t, dsn, schema), openStore(t, dsn, schema)}
	reader := openStore(t, dsn, schema)

	const perWriter, keys = 4, 25
	var wg sync.WaitGroup
	errc := make(chan error, len(writers)*perWriter)
	for si, s := range writers {
		for w := range perWriter {
			wg.Go(func() {
				for i := range keys {
					key := fmt.Sprintf("x/%d/%d/%d", si, w, i)
					rev, err := s.Create(ctx, key, []byte("1"))
					if err == nil {
						_, err = s.Update(ctx, key, []byte("2"), rev)
					}
					if err == nil && i%4 == 0 {
						err = s.Delete(ctx, key, 0)
					}
					if err != nil {
						errc <- err
						return
					}
				}
			})
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	state := map[string]storage.Event{}
	var since int64
	polls := 0
	poll := func() int {
		ch, err := reader.Changes(ctx, "x/", since, 5)
		if err != nil {
			t.Fatal(err)
		}
		polls++
		for _, e := range ch.Events {
			if e.Revision <= since {
				t.Fatalf("event at revision %d not after cursor %d", e.Revision, since)
			}
			state[e.Key] = e
		}
		since = ch.Revision
		return len(ch.Events)
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			poll()
		}
	}
	for poll() > 0 {
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	recs, err := reader.List(ctx, "x/")
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, e := range state {
		if e.Type == storage.EventPut {
			live++
		}
	}
	if live != len(recs) {
		t.Fatalf("the feed reader sees %d live keys, List %d: a change was skipped", live, len(recs))
	}
	for _, r := range recs {
		if e := state[r.Key]; e.Type != storage.EventPut || e.Revision != r.Revision {
			t.Fatalf("the feed reader's last event for %s is %s@%d, List has revision %d", r.Key, e.Type, e.Revision, r.Revision)
		}
	}
	if want := len(writers) * perWriter * (keys - (keys+3)/4); len(recs) != want { // every 4th key deleted
		t.Fatalf("%d live keys, want %d", len(recs), want)
	}
	t.Logf("%d polls followed %d writers on 2 stores; %d live keys agree with List", polls, len(writers)*perWriter, len(recs))
}
