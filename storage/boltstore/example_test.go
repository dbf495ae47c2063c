package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bmckit/bmckit/storage/boltstore"
)

func Example() {
	dir, _ := os.MkdirTemp("", "bmckit")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := boltstore.Open(filepath.Join(dir, "bmckit.db"), boltstore.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rev, _ := s.Create(ctx, "jobs/a", []byte("pending"))
	_, _ = s.Update(ctx, "jobs/a", []byte("done"), rev)
	_ = s.Close()

	// Reopened, the write is still there.
	s, _ = boltstore.Open(filepath.Join(dir, "bmckit.db"), boltstore.Options{})
	defer s.Close()
	r, _ := s.Get(ctx, "jobs/a")
	fmt.Printf("%s\n", r.Value)
	// Output: done
}
