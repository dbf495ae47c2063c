package memstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

func Example() {
	ctx := context.Background()
	s := memstore.New()
	rev, _ := s.Create(ctx, "jobs/a", []byte("pending"))
	if _, err := s.Update(ctx, "jobs/a", []byte("running"), rev); err != nil {
		fmt.Println(err)
	}
	// A second writer still holding the old revision loses.
	_, err := s.Update(ctx, "jobs/a", []byte("stale"), rev)
	fmt.Println(errors.Is(err, storage.ErrConflict))
	r, _ := s.Get(ctx, "jobs/a")
	fmt.Printf("%s\n", r.Value)
	// Output:
	// true
	// running
}

func ExampleStore_Changes() {
	ctx := context.Background()
	s := memstore.New()
	f := storage.NewFollower(s, "boot/")
	_, _ = f.Next(ctx) // nothing yet
	_, _ = s.Create(ctx, "boot/node-1", []byte("booted"))
	_ = s.Delete(ctx, "boot/node-1", 0)
	_, _ = s.Create(ctx, "boot/node-2", []byte("booted"))
	evs, _ := f.Next(ctx)
	for _, e := range evs {
		fmt.Println(e.Type, e.Key)
	}
	// Output:
	// put boot/node-2
}
