package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/storagetest"
)

func TestStore(t *testing.T) {
	dsn := testDSN(t)
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return openStore(t, dsn, newSchema(t, dsn))
	})
}

func TestMigrationsIdempotentAndConcurrent(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	var wg sync.WaitGroup
	stores := make([]*sqlstore.Store, 4)
	errs := make([]error, 4)
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: schema}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open #%d: %v", i, err)
		}
		defer stores[i].Close(context.Background())
	}
	v, err := stores[0].MigrationVersion(context.Background())
	if err != nil || v != 2 {
		t.Fatalf("MigrationVersion = %d, %v; want 2", v, err)
	}
	// A store written by a newer bmckit is refused.
	if _, err := stores[0].DB().Exec("INSERT INTO " + schema + ".bmckit_migrations (version, name) VALUES (99, '0099_future.sql')"); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: schema}})
	if err == nil || !strings.Contains(err.Error(), "upgrade bmckit") {
		t.Fatalf("Open of a newer schema = %v, want an error asking to upgrade", err)
	}
}

func TestTablePrefixesShareSchema(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	ctx := context.Background()
	a, err := postgres.Open(ctx, dsn, postgres.Options{Store: sqlstore.Options{Schema: schema, TablePrefix: "a_"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := postgres.Open(ctx, dsn, postgres.Options{Store: sqlstore.Options{Schema: schema, TablePrefix: "b_"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if _, err := a.Create(ctx, "k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "k"); !storageIsNotFound(err) {
		t.Fatalf("store with prefix b_ sees a_'s key: %v", err)
	}
}

func storageIsNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), storage.ErrNotFound.Error())
}

func TestBadOptionsAndSecrets(t *testing.T) {
	ctx := context.Background()
	if _, err := sqlstore.New(ctx, nil, sqlstore.Options{}); err == nil || !strings.Contains(err.Error(), "db is nil") {
		t.Fatalf("New with a nil DB = %v", err)
	}
	db := stdlib.OpenDB(pgx.ConnConfig{}) // never connected: options fail first
	defer db.Close()
	for _, opts := range []sqlstore.Options{{Schema: "Bad-Schema"}, {TablePrefix: "x; DROP TABLE y"}, {IdleInTransactionTimeout: time.Microsecond}} {
		_, err := sqlstore.New(ctx, db, opts)
		if err == nil || !strings.Contains(err.Error(), "Options.") {
			t.Fatalf("New(%+v) = %v, want an error naming the option", opts, err)
		}
	}
	// Neither a DSN that does not parse nor a refused login repeats the
	// password.
	const secret = "s3cr3t-pw-do-not-log"
	for _, dsn := range []string{
		"postgres://bmckit:" + secret + "@127.0.0.1:1/bmckit?sslmode=disable&connect_timeout=2",
		"postgres://bmckit:" + secret + "@127.0.0.1:5432/bmckit?sslmode=bogus",
		"postgres://bmckit:" + secret + "@127.0.0.1:5432/bmckit?sslmode=disable&connect_timeout=5",
	} {
		_, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err == nil {
			t.Fatalf("Open(%q) succeeded", dsn)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error leaks the password: %v", err)
		}
		t.Log(err)
	}
}

// TestUpgradeFromVersion1 rolls a schema back to migration 1 and checks that
// Open applies migration 2 to it.
func TestUpgradeFromVersion1(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	ctx := context.Background()
	s := openStore(t, dsn, schema)
	if _, err := s.Create(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, "DROP INDEX "+schema+".bmckit_kv_tombstones; DELETE FROM "+schema+".bmckit_migrations WHERE version = 2"); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, dsn, schema)
	if v, err := s2.MigrationVersion(ctx); err != nil || v != 2 {
		t.Fatalf("after reopening a version 1 schema: MigrationVersion = %d, %v; want 2", v, err)
	}
	var n int
	if err := s2.DB().QueryRowContext(ctx, "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = 'bmckit_kv_tombstones'", schema).Scan(&n); err != nil || n != 1 {
		t.Fatalf("tombstone index after upgrade: %d, %v", n, err)
	}
	if r, err := s2.Get(ctx, "k"); err != nil || string(r.Value) != "v" {
		t.Fatalf("record after upgrade: %+v, %v", r, err)
	}
}

func TestAutomaticCompaction(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn, postgres.Options{Store: sqlstore.Options{Schema: newSchema(t, dsn), TombstoneRevisions: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	storagetest.CheckAutoCompaction(t, s, 10)
}
