package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/groupcommit"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
)

// plainDriver hides pgx behind database/sql's driver interfaces alone, as
// another PostgreSQL driver would look to the store: its connections have
// no Conn() *pgx.Conn, so a batch takes the one-round-trip-per-statement
// path.
type plainDriver struct{ d driver.Driver }

func (p plainDriver) Open(name string) (driver.Conn, error) {
	c, err := p.d.Open(name)
	if err != nil {
		return nil, err
	}
	return plainConn{c}, nil
}

// plainConn passes on what database/sql uses of a connection (statements
// with and without preparing, transactions, argument checks), and nothing
// else.
type plainConn struct{ driver.Conn }

func (c plainConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c plainConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c plainConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c plainConn) CheckNamedValue(v *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(v)
}

func init() { sql.Register("bmckit-plain-pgx", plainDriver{stdlib.GetDefaultDriver()}) }

// batchCase is one write of the batch TestBatchOutcomes commits, and what
// it must come to.
type batchCase struct {
	name string
	op   func(s *Store) *writeOp
	want error // nil, or what the write's error must wrap
	// after: the key's value once the batch is done ("" for absent).
	key, after string
}

// TestBatchOutcomes commits one batch holding every kind of outcome
// (created, updated, deleted, ErrExists, ErrConflict, ErrNotFound, a
// cancelled writer) on both paths, pgx's pipeline and one round trip per
// statement, and checks each write's outcome and the stored records; then
// the same with a statement that fails in the middle, after which each
// write must run alone and still get its own outcome.
func TestBatchOutcomes(t *testing.T) {
	dsn := pgtest.DSN(t)
	for _, path := range []string{"pipelined", "one-round-trip-each"} {
		for _, withFailure := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/failing-statement=%v", path, withFailure), func(t *testing.T) {
				dsn := pgtest.WithAppName(dsn, fmt.Sprintf("batch-outcomes-%d", time.Now().UnixNano()))
				var db *sql.DB
				if path == "pipelined" {
					cfg, err := pgx.ParseConfig(dsn)
					if err != nil {
						t.Fatal(err)
					}
					db = stdlib.OpenDB(*cfg)
				} else {
					var err error
					if db, err = sql.Open("bmckit-plain-pgx", dsn); err != nil {
						t.Fatal(err)
					}
				}
				defer db.Close()
				ctx := context.Background()
				s, err := New(ctx, db, Options{Schema: pgtest.Schema(t, dsn)})
				if err != nil {
					t.Fatal(err)
				}
				revs := map[string]int64{}
				for _, k := range []string{"k/exists", "k/update", "k/stale", "k/delete", "k/gone"} {
					if revs[k], err = s.Create(ctx, k, []byte("v0")); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Delete(ctx, "k/gone", 0); err != nil {
					t.Fatal(err)
				}
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				cases := []batchCase{
					{name: "create", key: "k/new", after: "v1", op: func(s *Store) *writeOp {
						return &writeOp{ctx: ctx, op: "create", key: "k/new", query: s.qInsert, args: []any{"k/new", []byte("v1")}, create: true}
					}},
					{name: "create existing", key: "k/exists", after: "v0", want: storage.ErrExists, op: func(s *Store) *writeOp {
						return &writeOp{ctx: ctx, op: "create", key: "k/exists", query: s.qInsert, args: []any{"k/exists", []byte("v1")}, create: true}
					}},
					{name: "update", key: "k/update", after: "v1", op: func(s *Store) *writeOp {
						return &writeOp{ctx: ctx, op: "update", key: "k/update", query: s.qUpdate, args: []any{"k/update", []byte("v1"), revs["k/update"]}, revision: revs["k/update"]}
					}},
					{name: "update stale", key: "k/stale", after: "v0", want: storage.ErrConflict, op: func(s *Store) *writeOp {
						return &writeOp{ctx: ctx, op: "update", key: "k/stale", query: s.qUpdate, args: []any{"k/stale", []byte("v1"), revs["k/stale"] - 1}, revision: revs["k/stale"] - 1}
					}},
					{name: "update deleted", key: "k/gone", want: storage.ErrNotFound, op: func(s *Store) *writeOp {
						return &writeOp{ctx: ctx, op: "update", key: "k/gone", query: s.qUpdate, args: []any{"k/gone", []byte("v1"), revs["k/gone"]}, revision: revs["k/gone"]}
					}},
					{name: "delete", key: "k/delete", op: func(s *Store) *writeOp {
						return &writeOp{ctx: ctx, op: "delete", key: "k/delete", query: s.qDelete, args: []any{"k/delete", revs["k/delete"]}, revision: revs["k/delete"]}
					}},
					{name: "delete missing", key: "k/never", want: storage.ErrNotFound, op: func(s *Store) *writeOp {
						return &writeOp{ctx: ctx, op: "delete", key: "k/never", query: s.qDelete, args: []any{"k/never", int64(0)}}
					}},
					{name: "cancelled writer", key: "k/cancelled", want: context.Canceled, op: func(s *Store) *writeOp {
						return &writeOp{ctx: cancelled, op: "create", key: "k/cancelled", query: s.qInsert, args: []any{"k/cancelled", []byte("v1")}, create: true}
					}},
				}
				if withFailure {
					cases = append(cases[:3:3], append([]batchCase{{name: "failing statement", want: errors.New("division by zero"), op: func(s *Store) *writeOp {
						return &writeOp{ctx: ctx, op: "update", key: "k/x", query: "SELECT 1/(0*$1::int)::bigint", args: []any{int64(1)}}
					}}}, cases[3:]...)...)
				}
				batch := make([]*groupcommit.Op[*writeOp], len(cases))
				for i, c := range cases {
					w := c.op(s)
					batch[i] = &groupcommit.Op[*writeOp]{Ctx: w.ctx, Fn: w}
				}
				before := s.pipelined.Load()
				s.commitBatch(batch)
				wantPipelined := int64(0)
				if path == "pipelined" && !withFailure {
					wantPipelined = 1
				}
				if got := s.pipelined.Load() - before; got != wantPipelined {
					t.Errorf("batches committed pipelined: %d, want %d", got, wantPipelined)
				}
				last := int64(0)
				for i, c := range cases {
					err := batch[i].Err
					switch {
					case c.want == nil && err != nil:
						t.Errorf("%s: %v, want success", c.name, err)
					case c.want != nil && err == nil:
						t.Errorf("%s: succeeded, want %v", c.name, c.want)
					case c.want != nil && !errors.Is(err, c.want) && !strings.Contains(err.Error(), c.want.Error()):
						t.Errorf("%s: %v, want %v", c.name, err, c.want)
					case c.want == nil:
						if w := batch[i].Fn; w.rev <= last {
							t.Errorf("%s: revision %d after %d: revisions of one batch must increase", c.name, w.rev, last)
						} else {
							last = w.rev
						}
					}
					if c.key == "" {
						continue
					}
					r, err := s.Get(ctx, c.key)
					switch {
					case c.after == "" && !errors.Is(err, storage.ErrNotFound):
						t.Errorf("%s: %q after the batch: %v %q, want not found", c.name, c.key, err, r.Value)
					case c.after != "" && (err != nil || string(r.Value) != c.after):
						t.Errorf("%s: %q after the batch: %v %q, want %q", c.name, c.key, err, r.Value, c.after)
					}
				}
				// The connection went back to the pool outside any
				// transaction: a write on it commits alone.
				if _, err := s.Create(ctx, "k/after", []byte("x")); err != nil {
					t.Fatal(err)
				}
				var idle int
				if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid() AND application_name = current_setting('application_name')").Scan(&idle); err != nil {
					t.Fatal(err)
				}
				if idle != 0 {
					t.Errorf("%d of the pool's sessions left idle inside a transaction", idle)
				}
			})
		}
	}
}
