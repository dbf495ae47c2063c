package postgres_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/bmckit/bmckit/storage/storagetest"
)

// Benchmarks for docs/benchmarks.md. Each store benchmark has a "Bare"
// twin doing the nearest plain SQL on the same server in the same run: the
// physical ceiling (one autocommit single-row UPDATE, or SELECT, per
// operation).

var value = storagetest.BenchValue

// BenchmarkUpdate: committed compare-and-swap updates of one key.
func BenchmarkUpdate(b *testing.B) {
	dsn := testDSN(b)
	storagetest.BenchUpdate(b, openStore(b, dsn, newSchema(b, dsn)))
}

// BenchmarkBareUpdate: an autocommit single-row UPDATE per iteration.
func BenchmarkBareUpdate(b *testing.B) {
	dsn := testDSN(b)
	schema := newSchema(b, dsn)
	s := openStore(b, dsn, schema)
	db := s.DB()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+schema+".bare (id int PRIMARY KEY, v bytea, n bigint); INSERT INTO "+schema+".bare VALUES (1, '', 0)"); err != nil {
		b.Fatal(err)
	}
	q := "UPDATE " + schema + ".bare SET v = $1, n = n + 1 WHERE id = 1"
	b.ResetTimer()
	for b.Loop() {
		if _, err := db.ExecContext(ctx, q, value); err != nil {
			b.Fatal(err)
		}
	}
	storagetest.PerSec(b, "writes/s")
}

// BenchmarkUpdateParallel: 8 goroutines, each updating its own key. Writes
// to one store are serialized by the revision counter row.
func BenchmarkUpdateParallel(b *testing.B) {
	dsn := testDSN(b)
	storagetest.BenchUpdateParallel(b, openStore(b, dsn, newSchema(b, dsn)))
}

// BenchmarkBareUpdateParallel: 8 goroutines, each an autocommit UPDATE of
// its own row (no shared counter).
func BenchmarkBareUpdateParallel(b *testing.B) {
	dsn := testDSN(b)
	schema := newSchema(b, dsn)
	s := openStore(b, dsn, schema)
	db := s.DB()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+schema+".bare (id int PRIMARY KEY, v bytea, n bigint); INSERT INTO "+schema+".bare SELECT g, '', 0 FROM generate_series(1, 64) g"); err != nil {
		b.Fatal(err)
	}
	q := "UPDATE " + schema + ".bare SET v = $1, n = n + 1 WHERE id = $2"
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := next.Add(1)
		for pb.Next() {
			if _, err := db.ExecContext(ctx, q, value, id); err != nil {
				b.Error(err)
				return
			}
		}
	})
	storagetest.PerSec(b, "writes/s")
}

// BenchmarkGet: parallel Gets of 1000 keys.
func BenchmarkGet(b *testing.B) {
	dsn := testDSN(b)
	storagetest.BenchGet(b, openStore(b, dsn, newSchema(b, dsn)))
}

// BenchmarkBareGet: parallel single-row SELECTs by primary key.
func BenchmarkBareGet(b *testing.B) {
	dsn := testDSN(b)
	schema := newSchema(b, dsn)
	s := openStore(b, dsn, schema)
	db := s.DB()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+schema+".bare (key text PRIMARY KEY, v bytea); INSERT INTO "+schema+".bare SELECT 'jobs/' || g, decode(repeat('00', 512), 'hex') FROM generate_series(0, 999) g"); err != nil {
		b.Fatal(err)
	}
	q := "SELECT v FROM " + schema + ".bare WHERE key = $1"
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		var v []byte
		for pb.Next() {
			if err := db.QueryRowContext(ctx, q, "jobs/"+strconv.Itoa(i%1000)).Scan(&v); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	storagetest.PerSec(b, "reads/s")
}
