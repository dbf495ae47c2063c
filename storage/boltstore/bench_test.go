package boltstore_test

import (
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/storage/storagetest"
)

// Benchmarks for docs/benchmarks.md. Each store benchmark has a "Bare"
// twin doing the same I/O with bbolt directly in the same run: the
// physical ceiling on this disk.

var value = storagetest.BenchValue

func benchStore(b *testing.B) *boltstore.Store {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkUpdate: committed (fsynced) compare-and-swap updates of one key.
func BenchmarkUpdate(b *testing.B) { storagetest.BenchUpdate(b, benchStore(b)) }

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
	storagetest.PerSec(b, "writes/s")
}

// BenchmarkGet: parallel Gets of 1000 keys.
func BenchmarkGet(b *testing.B) { storagetest.BenchGet(b, benchStore(b)) }

// BenchmarkBareGet: parallel bbolt View + Get + copy of the same keys.
func BenchmarkBareGet(b *testing.B) {
	s := benchStore(b)
	storagetest.Fill(b, s, 1000)
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
	storagetest.PerSec(b, "reads/s")
}

// BenchmarkUpdateParallel: 8 goroutines, each CAS-updating its own key;
// concurrent writes share commits (group commit).
func BenchmarkUpdateParallel(b *testing.B) { storagetest.BenchUpdateParallel(b, benchStore(b)) }

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
	storagetest.PerSec(b, "writes/s")
}
