package autocompact_test

import (
	"fmt"

	"github.com/bmckit/bmckit/storage/autocompact"
)

// A store calls AfterDelete after each delete and compacts when it returns
// a revision.
func Example() {
	p := autocompact.New(1000) // keep tombstones for 1000 revisions
	compactions := 0
	for rev := int64(1); rev <= 10_000; rev++ {
		if to := p.AfterDelete(rev); to > 0 {
			compactions++
			_ = to // store.Compact(ctx, to)
		}
	}
	fmt.Println("compactions:", compactions)
	// Output: compactions: 36
}
