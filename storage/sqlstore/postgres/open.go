package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/bmckit/bmckit/storage/sqlstore"
)

// Options configure Open. The zero value means defaults.
type Options struct {
	// Store configures the tables (schema, prefix, logger). CloseDB is
	// always set: the store owns the pool Open creates.
	Store sqlstore.Options
	// MaxOpenConns caps the connection pool. Defaults to 10.
	MaxOpenConns int
	// ConnMaxIdleTime closes idle connections after this long. Defaults to
	// 5 minutes.
	ConnMaxIdleTime time.Duration
}

// Open connects to PostgreSQL at dsn with pgx, checks the connection,
// applies pending migrations and returns the store. Close the store to close
// the pool.
func Open(ctx context.Context, dsn string, opts Options) (*sqlstore.Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors redact the password.
		return nil, fmt.Errorf("postgres: parse DSN: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	maxConns := opts.MaxOpenConns
	if maxConns <= 0 {
		maxConns = 10
	}
	idle := opts.ConnMaxIdleTime
	if idle <= 0 {
		idle = 5 * time.Minute
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(idle)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: connect to %s:%d database %q as %q: %w", cfg.Host, cfg.Port, cfg.Database, cfg.User, err)
	}
	sopts := opts.Store
	sopts.CloseDB = true
	s, err := sqlstore.New(ctx, db, sopts)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}
