// Package fanout runs one batch of store calls concurrently, bounded: the
// job package's Runner issues its lock claims, renewals, releases and
// sweeps, and its replicas' watches, together, so a store with group
// commit folds them into few commits.
package fanout

import "sync"

// Limit bounds the concurrent calls of one batch.
const Limit = 256

// Do calls f(i) for every i < n, at most Limit at once, and returns when
// every call returned.
func Do(n int, f func(i int)) { DoLimit(n, Limit, f) }

// DoLimit is Do with at most limit calls at once.
func DoLimit(n, limit int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(limit, 1))
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}
