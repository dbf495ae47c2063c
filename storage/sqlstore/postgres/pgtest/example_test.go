package pgtest_test

import (
	"context"
	"testing"

	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
)

// DSN skips a test when no database is configured
// (BMCKIT_TEST_POSTGRES_DSN), and Schema gives each test its own schema,
// dropped when the test ends. (Compiled, not run: it needs the *testing.T
// of a test function.)
func ExampleSchema() {
	testWithPostgres := func(t *testing.T) {
		dsn := pgtest.DSN(t)
		store, err := postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: pgtest.Schema(t, dsn)}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close(context.Background()) })
		// ... use store
	}
	_ = testWithPostgres // func TestWithPostgres(t *testing.T) { ... } in a _test.go file
}
