package storagetest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/bmckit/bmckit/storage"
)

// The store-side loops of bmckit's storage benchmarks, shared by every
// backend (and usable on a user's own Store) so the numbers in
// docs/benchmarks.md measure the same operations everywhere. Each backend
// pairs them with a "Bare" benchmark of its own: the same I/O without the
// store, measured in the same run.

// BenchValue is the value every benchmark writes: 512 bytes.
var BenchValue = make([]byte, 512)

// PerSec reports b.N per second of the benchmark's elapsed time as unit.
func PerSec(b *testing.B, unit string) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

// BenchUpdate measures committed compare-and-swap updates of one key
// (writes/s).
func BenchUpdate(b *testing.B, s storage.Store) {
	ctx := context.Background()
	rev, err := s.Create(ctx, "jobs/bench", BenchValue)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if rev, err = s.Update(ctx, "jobs/bench", BenchValue, rev); err != nil {
			b.Fatal(err)
		}
	}
	PerSec(b, "writes/s")
}

// BenchUpdateParallel measures 8 goroutines (with GOMAXPROCS 2), each
// compare-and-swap updating its own key (writes/s).
func BenchUpdateParallel(b *testing.B, s storage.Store) {
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(4) // 4 x GOMAXPROCS(2) = 8 writers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := "jobs/" + strconv.FormatInt(next.Add(1), 10)
		rev, err := s.Create(ctx, key, BenchValue)
		for pb.Next() {
			if err != nil {
				b.Error(err)
				return
			}
			rev, err = s.Update(ctx, key, BenchValue, rev)
		}
	})
	PerSec(b, "writes/s")
}

// Fill creates n records jobs/0 ... jobs/<n-1>.
func Fill(b *testing.B, s storage.Store, n int) {
	ctx := context.Background()
	for i := range n {
		if _, err := s.Create(ctx, "jobs/"+strconv.Itoa(i), BenchValue); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchGet measures parallel Gets of 1000 keys (reads/s).
func BenchGet(b *testing.B, s storage.Store) {
	Fill(b, s, 1000)
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.Get(ctx, "jobs/"+strconv.Itoa(i%1000)); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	PerSec(b, "reads/s")
}
