package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/storage"
)

// TestGroupCommitCancelled starts many concurrent Creates and cancels half
// of their contexts while they wait to be committed together. A Create that
// returned nil must be stored; one that returned a context error must not.
func TestGroupCommitCancelled(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "gc.db"))
	const n = 200
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Create(ctx, fmt.Sprintf("k/%03d", i), []byte("v"))
		}()
		if i%2 == 1 {
			wg.Add(1)
			go func() { defer wg.Done(); cancel() }()
		} else {
			defer cancel()
		}
	}
	wg.Wait()
	ctx := context.Background()
	stored, cancelled := 0, 0
	for i, err := range errs {
		key := fmt.Sprintf("k/%03d", i)
		_, gerr := s.Get(ctx, key)
		switch {
		case err == nil:
			stored++
			if gerr != nil {
				t.Fatalf("Create(%s) succeeded but Get: %v", key, gerr)
			}
		case errors.Is(err, context.Canceled):
			cancelled++
			if !errors.Is(gerr, storage.ErrNotFound) {
				t.Fatalf("Create(%s) returned %v but the record is there (Get: %v)", key, err, gerr)
			}
		default:
			t.Fatalf("Create(%s): %v", key, err)
		}
	}
	if stored < n/2 {
		t.Fatalf("only %d of the %d uncancelled Creates stored", stored, n/2)
	}
	t.Logf("%d stored, %d cancelled", stored, cancelled)
}
