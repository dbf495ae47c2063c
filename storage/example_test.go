package storage_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// A Store is a versioned key-value contract: Create refuses a taken key,
// Update is a compare-and-swap on the revision.
func ExampleStore() {
	ctx := context.Background()
	var s storage.Store = memstore.New()

	rev, _ := s.Create(ctx, "jobs/a", []byte(`{"n":1}`))
	_, err := s.Create(ctx, "jobs/a", []byte(`{"n":1}`))
	fmt.Println("create again:", errors.Is(err, storage.ErrExists))

	newRev, _ := s.Update(ctx, "jobs/a", []byte(`{"n":2}`), rev)
	fmt.Println("revision grew:", newRev > rev)

	_, err = s.Update(ctx, "jobs/a", []byte(`{"n":3}`), rev) // stale revision
	fmt.Println("stale update:", errors.Is(err, storage.ErrConflict))

	r, _ := s.Get(ctx, "jobs/a")
	fmt.Println(string(r.Value))
	// Output:
	// create again: true
	// revision grew: true
	// stale update: true
	// {"n":2}
}

// Modify owns the read-modify-write loop: fn computes the new value from
// the current one and is called again after a conflicting write.
func ExampleModify() {
	ctx := context.Background()
	s := memstore.New()
	incr := func(cur *storage.Record) ([]byte, error) {
		if cur == nil {
			return []byte("1"), nil
		}
		var n int
		fmt.Sscan(string(cur.Value), &n)
		return []byte(fmt.Sprint(n + 1)), nil
	}
	for range 3 {
		if _, err := storage.Modify(ctx, s, "counter", incr); err != nil {
			panic(err)
		}
	}
	r, _ := s.Get(ctx, "counter")
	fmt.Println(string(r.Value))
	// Output:
	// 3
}
