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
				for _, k := range []string{"k/exists", "k/update", "k/stale", "k/delete", "k/gone", "k/twice", "k/recreate"} {
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
					{name: "create", key: "k/new", after: "v1", op: func(s *Store) *writeOp { return s.createOp(ctx, "k/new", []byte("v1")) }},
					{name: "create existing", key: "k/exists", after: "v0", want: storage.ErrExists, op: func(s *Store) *writeOp {
						return s.createOp(ctx, "k/exists", []byte("v1"))
					}},
					{name: "update", key: "k/update", after: "v1", op: func(s *Store) *writeOp {
						return s.updateOp(ctx, "k/update", []byte("v1"), revs["k/update"])
					}},
					{name: "update stale", key: "k/stale", after: "v0", want: storage.ErrConflict, op: func(s *Store) *writeOp {
						return s.updateOp(ctx, "k/stale", []byte("v1"), revs["k/stale"]-1)
					}},
					{name: "update deleted", key: "k/gone", want: storage.ErrNotFound, op: func(s *Store) *writeOp {
						return s.updateOp(ctx, "k/gone", []byte("v1"), revs["k/gone"])
					}},
					{name: "delete", key: "k/delete", op: func(s *Store) *writeOp { return s.deleteOp(ctx, "k/delete", revs["k/delete"]) }},
					{name: "delete missing", key: "k/never", want: storage.ErrNotFound, op: func(s *Store) *writeOp { return s.deleteOp(ctx, "k/never", 0) }},
					{name: "cancelled writer", key: "k/cancelled", want: context.Canceled, op: func(s *Store) *writeOp {
						return s.createOp(cancelled, "k/cancelled", []byte("v1"))
					}},
					// A key written more than once in one batch: each write
					// in its turn, seeing the ones before it (only the last
					// names the key for the check of the stored record).
					{name: "update, then", op: func(s *Store) *writeOp { return s.updateOp(ctx, "k/twice", []byte("v1"), revs["k/twice"]) }},
					{name: "update of the same revision again", want: storage.ErrConflict, op: func(s *Store) *writeOp {
						return s.updateOp(ctx, "k/twice", []byte("v2"), revs["k/twice"])
					}},
					{name: "unconditional delete after it", key: "k/twice", op: func(s *Store) *writeOp { return s.deleteOp(ctx, "k/twice", 0) }},
					{name: "delete, then", op: func(s *Store) *writeOp { return s.deleteOp(ctx, "k/recreate", revs["k/recreate"]) }},
					{name: "create after it", key: "k/recreate", after: "v2", op: func(s *Store) *writeOp { return s.createOp(ctx, "k/recreate", []byte("v2")) }},
				}
				if withFailure {
					// A statement the server refuses: a trigger fails the
					// write of k/fail, on both paths and when it runs alone.
					trig := s.expand(`CREATE FUNCTION ${schema}.fail_k() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
						IF NEW.key = 'k/fail' THEN RAISE EXCEPTION 'refused by the test trigger'; END IF; RETURN NEW; END $$;
						CREATE TRIGGER fail_k BEFORE INSERT OR UPDATE ON ${schema}.${prefix}kv FOR EACH ROW EXECUTE FUNCTION ${schema}.fail_k()`)
					if _, err := db.ExecContext(ctx, trig); err != nil {
						t.Fatal(err)
					}
					cases = append(cases[:3:3], append([]batchCase{{name: "failing statement", key: "k/fail", want: errors.New("refused by the test trigger"), op: func(s *Store) *writeOp {
						return s.createOp(ctx, "k/fail", []byte("v1"))
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

// TestBatchSplitsLargeValues: when a kind of write's values exceed what one
// statement may carry (maxStatementValues, lowered here), the batch takes
// more statements of that kind and still commits in one pipelined
// transaction, each write with its own outcome and revisions increasing
// in arrival order.
func TestBatchSplitsLargeValues(t *testing.T) {
	s, _ := pgxStore(t)
	ctx := context.Background()
	defer func(old int) { maxStatementValues = old }(maxStatementValues)
	maxStatementValues = 10 // two 6-byte values do not fit one statement

	revs := map[string]int64{}
	for _, k := range []string{"u/1", "u/2", "u/3"} {
		var err error
		if revs[k], err = s.Create(ctx, k, []byte("v0")); err != nil {
			t.Fatal(err)
		}
	}
	var ops []*writeOp
	for _, k := range []string{"c/1", "c/2", "c/3"} {
		ops = append(ops, s.createOp(ctx, k, []byte("value1")))
	}
	for _, k := range []string{"u/1", "u/2", "u/3"} {
		ops = append(ops, s.updateOp(ctx, k, []byte("value1"), revs[k]))
	}
	batch := make([]*groupcommit.Op[*writeOp], len(ops))
	for i, w := range ops {
		batch[i] = &groupcommit.Op[*writeOp]{Ctx: ctx, Fn: w}
	}
	if got := len(s.batchPlan(batch)); got != 7 { // the revisions, then 3 creates and 3 updates one each
		t.Fatalf("batchPlan: %d statements, want 7", got)
	}
	before := s.pipelined.Load()
	s.commitBatch(batch)
	if got := s.pipelined.Load() - before; got != 1 {
		t.Errorf("batches committed pipelined: %d, want 1", got)
	}
	last := int64(0)
	for _, o := range batch {
		if o.Err != nil {
			t.Fatalf("%s %q: %v", o.Fn.op, o.Fn.key, o.Err)
		}
		if o.Fn.rev <= last {
			t.Errorf("%q: revision %d after %d", o.Fn.key, o.Fn.rev, last)
		}
		last = o.Fn.rev
		r, err := s.Get(ctx, o.Fn.key)
		if err != nil || string(r.Value) != "value1" || r.Revision != o.Fn.rev {
			t.Errorf("%q after the batch: %v %q at %d, want %q at %d", o.Fn.key, err, r.Value, r.Revision, "value1", o.Fn.rev)
		}
	}
}
