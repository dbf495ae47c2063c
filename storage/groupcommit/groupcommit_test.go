package groupcommit_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/storage/groupcommit"
)

// TestBatchesAndOrder blocks the first commit until many writers have
// queued, then checks they were committed together, each exactly once, and
// that every writer got its own result.
func TestBatchesAndOrder(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	c := groupcommit.New(func(batch []*groupcommit.Op[int]) {
		mu.Lock()
		first := len(batches) == 0
		var ids []int
		for _, o := range batch {
			ids = append(ids, o.Fn)
			if o.Fn%2 == 1 {
				o.Err = errors.New("odd")
			}
		}
		batches = append(batches, ids)
		mu.Unlock()
		if first {
			close(started)
			<-release
		}
	})
	const n = 50
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); errs[0] = c.Do(context.Background(), 0) }()
	<-started
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.Do(context.Background(), i) }()
	}
	deadline := time.Now().Add(time.Minute)
	for c.Waiting() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writers queued after a minute", c.Waiting(), n)
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	seen := map[int]int{}
	for _, b := range batches {
		for _, id := range b {
			seen[id]++
		}
	}
	for i := 0; i <= n; i++ {
		if seen[i] != 1 {
			t.Fatalf("write %d committed %d times", i, seen[i])
		}
		if (errs[i] != nil) != (i%2 == 1) {
			t.Fatalf("write %d got error %v", i, errs[i])
		}
	}
	if len(batches) != 2 {
		t.Fatalf("%d writes took %d commits: want 2 (the first, then all queued behind it)", n+1, len(batches))
	}
	t.Logf("%d writes in %d commits", n+1, len(batches))
}

// TestCancelWhileQueued: a writer whose ctx ends while it waits behind a
// commit returns ctx.Err() and its write never runs.
func TestCancelWhileQueued(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var mu sync.Mutex
	ran := map[int]bool{}
	c := groupcommit.New(func(batch []*groupcommit.Op[int]) {
		mu.Lock()
		for _, o := range batch {
			ran[o.Fn] = true
		}
		mu.Unlock()
		select {
		case started <- struct{}{}:
			<-release
		default:
		}
	})
	done := make(chan error, 1)
	go func() { done <- c.Do(context.Background(), 1) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() { queued <- c.Do(ctx, 2) }()
	cancel()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		close(release)
		t.Fatalf("cancelled queued write returned %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The next write still commits (leadership was released).
	if err := c.Do(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if ran[2] || !ran[1] || !ran[3] {
		t.Fatalf("ran = %v, want 1 and 3 but not the cancelled 2", ran)
	}
}

// TestPanicReleasesWriters: a commit function that panics fails its batch's
// writers instead of leaving them waiting, and later writes still commit.
func TestPanicReleasesWriters(t *testing.T) {
	c := groupcommit.New(func(batch []*groupcommit.Op[int]) {
		if batch[0].Fn == 1 {
			panic("boom")
		}
	})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not reach the leader")
			}
		}()
		_ = c.Do(context.Background(), 1)
	}()
	if err := c.Do(context.Background(), 2); err != nil {
		t.Fatalf("write after a panicked commit: %v", err)
	}
}
