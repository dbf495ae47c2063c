package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
)

const envDSN = "BMCKIT_TEST_POSTGRES_DSN"

// testDSN returns the test database's DSN. Without one the test skips, or
// fails under CI=true where scripts/test.sh always provides it.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set under CI=true: scripts/test.sh should have started PostgreSQL", envDSN)
		}
		t.Skipf("%s is not set: no PostgreSQL to test against (scripts/test.sh starts one)", envDSN)
	}
	return dsn
}

// newSchema returns a fresh schema name and drops it at the end of the
// test, so parallel test packages and subtests never share tables.
func newSchema(t testing.TB, dsn string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bmckit_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{MaxOpenConns: 1})
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer s.Close(context.Background())
		if _, err := s.DB().ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// openStore opens a store in schema and closes it at the end of the test.
func openStore(t testing.TB, dsn, schema string) *sqlstore.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: schema}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}
