package boltstore_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/bmckit/bmckit/storage/boltstore"
)

// Benchmarks for docs/benchmarks.md. Each store benchmark has a "Bare"
// twin doing the same I/O with bbolt directly in the same run: the
// physical ceiling on this disk.

var value = make([]byte, 512)

func benchStore(b *testing.B) *boltstore.Store {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func perSec(b *testing.B, unit string) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

// BenchmarkUpdate: committed (fsynced) compare-and-swap updates of one key.
func BenchmarkUpdate(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	rev, err := s.Create(ctx, "jobs/bench", value)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if rev, err = s.Update(ctx, "jobs/bench", value, rev); err != nil {
			b.Fatal(err)
		}
	}
	perSec(b, "writes/s")
}

// BenchmarkBareUpdate: one bbolt Update (Put of the same size, fsync on
// commit) per iteration, no store logic.
func BenchmarkBareUpdate(b *testing.B) {
	s := benchStore(b)
	db := s.DB()
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("bare")); return err }); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("bare")).Put([]byte("jobs/bench"), value) }); err != nil {
			b.Fatal(err)
		}
	}
	perSec(b, "writes/s")
}

func fill(b *testing.B, s *boltstore.Store, n int) {
	ctx := context.Background()
	for i := range n {
		if _, err := s.Create(ctx, "jobs/"+strconv.Itoa(i), value); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet: parallel Gets of 1000 keys.
func BenchmarkGet(b *testing.B) {
	s := benchStore(b)
	fill(b, s, 1000)
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
	perSec(b, "reads/s")
}

// BenchmarkBareGet: parallel bbolt View + Get + copy of the same keys.
func BenchmarkBareGet(b *testing.B) {
	s := benchStore(b)
	fill(b, s, 1000)
	db := s.DB()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_ = db.View(func(tx *bolt.Tx) error {
				v := tx.Bucket([]byte("kv")).Get([]byte("jobs/" + strconv.Itoa(i%1000)))
				_ = append([]byte(nil), v...)
				return nil
			})
			i++
		}
	})
	perSec(b, "reads/s")
}

// BenchmarkUpdateParallel: 8 goroutines, each CAS-updating its own key;
// concurrent writes share commits (group commit).
func BenchmarkUpdateParallel(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(4) // 4 x GOMAXPROCS(2) = 8 writers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := "jobs/" + strconv.FormatInt(next.Add(1), 10)
		rev, err := s.Create(ctx, key, value)
		for pb.Next() {
			if err != nil {
				b.Error(err)
				return
			}
			rev, err = s.Update(ctx, key, value, rev)
		}
	})
	perSec(b, "writes/s")
}

// BenchmarkBareUpdateParallel: 8 goroutines, each a bare bbolt Update of
// its own key (bbolt serializes them: one commit and fsync each).
func BenchmarkBareUpdateParallel(b *testing.B) {
	s := benchStore(b)
	db := s.DB()
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("bare")); return err }); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := []byte("jobs/" + strconv.FormatInt(next.Add(1), 10))
		for pb.Next() {
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("bare")).Put(key, value) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
	perSec(b, "writes/s")
}
