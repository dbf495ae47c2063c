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
	"encoding/hex"
	"os"
	"testing"

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
