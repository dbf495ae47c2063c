package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/bmckit/bmckit/storage/sqlstore"
)

// New takes a *sql.DB the host opened with the PostgreSQL driver of its
// choice and migrates the tables; several replicas' Runners then share the
// store. (Compiled, not run: it needs a PostgreSQL server. The package's
// tests run against one when BMCKIT_TEST_POSTGRES_DSN is set.)
func ExampleNew() {
	ctx := context.Background()
	db, err := sql.Open("pgx", os.Getenv("BMCKIT_TEST_POSTGRES_DSN"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	store, err := sqlstore.New(ctx, db, sqlstore.Options{Schema: "bmckit", TablePrefix: "jobs_"})
	if err != nil {
		panic(err)
	}
	defer store.Close(ctx)
	// job.NewRunner(job.Config{Store: store, ...}) on every replica.
	rec, err := store.Get(ctx, "jobs/none")
	fmt.Println(rec.Revision, err)
}
