package groupcommit_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/bmckit/bmckit/storage/groupcommit"
)

// A store's write path: each writer calls Do with its change; the commit
// function applies a whole batch in one transaction and sets every Op's
// Err.
func Example() {
	var (
		mu      sync.Mutex
		applied []string
		commits int
	)
	c := groupcommit.New(func(batch []*groupcommit.Op[string]) {
		mu.Lock()
		defer mu.Unlock()
		commits++ // one fsync for the whole batch
		for _, op := range batch {
			applied = append(applied, op.Fn)
			op.Err = nil
		}
	})
	var wg sync.WaitGroup
	for _, k := range []string{"a", "b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Do(context.Background(), k); err != nil {
				fmt.Println(err)
			}
		}()
	}
	wg.Wait()
	fmt.Println(len(applied), "writes applied in", map[bool]string{true: "at most 4", false: "more than 4"}[commits <= 4], "commits")
	// Output: 4 writes applied in at most 4 commits
}
