package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations sorted by version. File names
// are NNNN_name.sql.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %q is not named NNNN_name.sql", e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrationLockID is the pg_advisory_xact_lock key that serializes
// migrations of all bmckit stores in one database ("bmckit" in ASCII).
const migrationLockID = 0x626d636b6974

// migrate applies the pending embedded migrations in one transaction.
func (s *Store) migrate(ctx context.Context) (err error) {
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := s.beginTx(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockID); err != nil {
		return err
	}
	if s.schema != "public" {
		if _, err := tx.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+s.schema); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.expand(`CREATE TABLE IF NOT EXISTS ${schema}.${prefix}migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`)); err != nil {
		return err
	}
	var current int
	row := tx.QueryRowContext(ctx, s.expand("SELECT COALESCE(max(version), 0) FROM ${schema}.${prefix}migrations"))
	if err := row.Scan(&current); err != nil {
		return err
	}
	if latest := ms[len(ms)-1].version; current > latest {
		return fmt.Errorf("database schema %s is at migration %d, this bmckit knows up to %d: upgrade bmckit", s.schema, current, latest)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		if _, err := tx.ExecContext(ctx, s.expand(m.sql)); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, s.expand("INSERT INTO ${schema}.${prefix}migrations (version, name) VALUES ($1, $2)"), m.version, m.name); err != nil {
			return err
		}
		s.log.Info("applied migration", "schema", s.schema, "migration", m.name)
	}
	return tx.Commit()
}

// expand fills in the schema and table prefix, both validated identifiers.
func (s *Store) expand(q string) string {
	return strings.NewReplacer("${schema}", s.schema, "${prefix}", s.prefix).Replace(q)
}

// MigrationVersion returns the newest migration applied to the store's
// schema.
func (s *Store) MigrationVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, s.expand("SELECT COALESCE(max(version), 0) FROM ${schema}.${prefix}migrations")).Scan(&v)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	return v, err
}
