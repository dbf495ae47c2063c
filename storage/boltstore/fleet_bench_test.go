package boltstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/storage/boltstore"
)

// BenchmarkFleetUpdates: the Runner's write pattern at fleet scale: keys
// records of 2 KiB (a netboot job's record), updated by compare-and-swap
// from 512 goroutines at once, each on its own keys, sharing commits. The
// cost per write should not grow with the number of records.
func BenchmarkFleetUpdates(b *testing.B) {
	for _, keys := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", keys), func(b *testing.B) {
			ctx := context.Background()
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "fleet.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			value := make([]byte, 2048)
			revs := make([]int64, keys)
			const writers = 512
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := w; k < keys; k += writers {
						if revs[k], err = s.Create(ctx, fmt.Sprintf("bmckit/jobs/job-%06d", k), value); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			st0 := s.DB().Stats()
			b.ResetTimer()
			var next sync.Mutex
			n := 0
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 1))
					for {
						next.Lock()
						if n >= b.N {
							next.Unlock()
							return
						}
						n++
						next.Unlock()
						// Each writer owns the keys k ≡ w (mod writers).
						k := w + writers*r.IntN(keys/writers)
						rev, err := s.Update(ctx, fmt.Sprintf("bmckit/jobs/job-%06d", k), value, revs[k])
						if err != nil {
							b.Error(err)
							return
						}
						revs[k] = rev
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			st1 := s.DB().Stats()
			st := st1.Sub(&st0)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
			b.ReportMetric(float64(st.TxStats.GetWrite())/float64(b.N), "pagewrites/write")
			b.ReportMetric(float64(b.N)/float64(st.TxStats.GetWrite()+1)*0+float64(st1.FreePageN), "freepages")
		})
	}
}
