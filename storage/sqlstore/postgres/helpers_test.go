package postgres_test

import (
	"context"
	"testing"

	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
)

const envDSN = pgtest.EnvDSN

func testDSN(t testing.TB) string { return pgtest.DSN(t) }

func newSchema(t testing.TB, dsn string) string { return pgtest.Schema(t, dsn) }

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
