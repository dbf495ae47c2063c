// Package pgtest gives tests a real PostgreSQL: the DSN from
// BMCKIT_TEST_POSTGRES_DSN (scripts/test.sh starts a server and sets it) and
// a private schema per test, dropped at the end, so parallel test packages
// never share tables.
//
// # Missing server
//
// Without the variable a test skips with a message, except under CI=true,
// where it fails: CI always provides the server.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// EnvDSN names the environment variable holding the test server's DSN.
const EnvDSN = "BMCKIT_TEST_POSTGRES_DSN"

// DSN returns the test database's DSN, or skips (fails under CI=true).
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set under CI=true: scripts/test.sh should have started PostgreSQL", EnvDSN)
		}
		t.Skipf("%s is not set: no PostgreSQL to test against (scripts/test.sh starts one)", EnvDSN)
	}
	return dsn
}

// Schema returns a fresh schema name (not yet created) and drops the schema
// at the end of the test if it exists by then.
func Schema(t testing.TB, dsn string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bmckit_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		db := stdlib.OpenDB(*cfg)
		defer db.Close()
		if _, err := db.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// WithAppName returns dsn (a URL or key=value DSN) with application_name set
// to name, so that a test can find that process's sessions in
// pg_stat_activity (see IdleInTransaction).
func WithAppName(dsn, name string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Set("application_name", name)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " application_name=" + name
}

// WriteTransactions reports how many sessions with application_name app
// (WithAppName) are inside a transaction that has written (it has a
// transaction ID), executing a statement or idle: a moment to stop that
// process at, if the test wants it stopped holding row locks (confirm with
// IdleInWriteTransaction once it is stopped).
func WriteTransactions(ctx context.Context, db *sql.DB, app string) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND backend_xid IS NOT NULL", app).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pgtest: sessions of %q: %w", app, err)
	}
	return n, nil
}

// IdleInWriteTransaction reports how many sessions with application_name
// app (WithAppName) are idle inside a transaction that has written
// something (it has a transaction ID), and so holds the row locks of what it
// wrote until it ends: for a process the test has just stopped (SIGSTOP),
// whether it was stopped in the middle of a writing transaction. It first
// waits, for up to within, until none of app's sessions is still executing
// a statement (a stopped client's statement runs to its end on the server).
func IdleInWriteTransaction(ctx context.Context, db *sql.DB, app string, within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	for {
		var active, idleInTx int
		err := db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE state = 'active'),
			count(*) FILTER (WHERE state = 'idle in transaction' AND backend_xid IS NOT NULL)
			FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&active, &idleInTx)
		if err != nil {
			return 0, fmt.Errorf("pgtest: sessions of %q: %w", app, err)
		}
		if active == 0 || time.Now().After(deadline) {
			return idleInTx, nil
		}
	}
}
