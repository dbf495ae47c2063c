package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
)

// TestQueryPlansUseIndexes checks, on a real server and with the generic
// plan PostgreSQL may pick for a prepared statement, that List, the change
// feed and compaction read through an index rather than a scan of the whole
// table.
func TestQueryPlansUseIndexes(t *testing.T) {
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	ctx := context.Background()
	s, err := New(ctx, db, Options{Schema: pgtest.Schema(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
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
