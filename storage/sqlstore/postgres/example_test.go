package postgres_test

import (
	"context"
	"os"

	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
)

// Open connects with pgx, migrates and returns the store, which owns the
// connection pool. (Compiled, not run: it needs a PostgreSQL server.)
func ExampleOpen() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, os.Getenv("BMCKIT_TEST_POSTGRES_DSN"), postgres.Options{
		Store:        sqlstore.Options{Schema: "bmckit"},
		MaxOpenConns: 20,
	})
	if err != nil {
		panic(err)
	}
	defer store.Close(ctx)
}
