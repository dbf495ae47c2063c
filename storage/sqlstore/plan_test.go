package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
)

// TestQueryPlansUseIndexes checks, on a real server and with the generic
// plan PostgreSQL may pick for a prepared statement, that List, the change
// feed, compaction and a pipelined batch's writes read through an index
// rather than a scan of the whole table.
func TestQueryPlansUseIndexes(t *testing.T) {
	s, db := pgxStore(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, s.expand(`INSERT INTO ${schema}.${prefix}kv (key, value, revision, deleted)
		SELECT 'jobs/' || g, ''::bytea, g, g % 10 = 0 FROM generate_series(1, 20000) g;
		UPDATE ${schema}.${prefix}meta SET revision = 20000; ANALYZE ${schema}.${prefix}kv`)); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name, query, args string
	}{
		{"List", s.qListRange, "'jobs/12', 'jobs/13'"},
		{"Changes", s.qChanges, `19990, 'jobs/%', 1000`},
		{"Compact", s.qCompact, "100"},
		// A pipelined batch's writes over arrays: each record by its key.
		{"batch creates", s.qInserts, `ARRAY['jobs/a', 'jobs/b'], ARRAY['\x00', '\x01']::bytea[], ARRAY[1, 0]::int8[]`},
		{"batch updates", s.qUpdates, `ARRAY['jobs/5', 'jobs/7'], ARRAY['\x00', '\x01']::bytea[], ARRAY[1, 0]::int8[], ARRAY[5, 7]::int8[]`},
		{"batch deletes", s.qDeletes, `ARRAY['jobs/5', 'jobs/7'], ARRAY[1, 0]::int8[], ARRAY[0, 7]::int8[]`},
	} {
		name := fmt.Sprintf("plan_%d", i)
		if _, err := conn.ExecContext(ctx, "PREPARE "+name+" AS "+tc.query); err != nil {
			t.Fatalf("%s: prepare: %v", tc.name, err)
		}
		rows, err := conn.QueryContext(ctx, "EXPLAIN EXECUTE "+name+"("+tc.args+")")
		if err != nil {
			t.Fatalf("%s: explain: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		if strings.Contains(p, "Seq Scan on "+s.prefix+"kv") || !strings.Contains(p, "Index") {
			t.Fatalf("%s does not use an index in its generic plan:\n%s", tc.name, p)
		}
		t.Logf("%s:\n%s", tc.name, p)
	}
}

// pgxStore opens a Store in a fresh schema on a pgx pool (the pipelined
// path), both closed at the end of the test.
func pgxStore(t *testing.T) (*Store, *sql.DB) {
	t.Helper()
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	s, err := New(context.Background(), db, Options{Schema: pgtest.Schema(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}
