package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/autocompact"
	"github.com/bmckit/bmckit/storage/groupcommit"
)

var (
	_ storage.Store      = (*Store)(nil)
	_ storage.ChangeFeed = (*Store)(nil)
	_ storage.Compactor  = (*Store)(nil)
)

// Options configure New. The zero value means defaults.
type Options struct {
	// Schema is the PostgreSQL schema holding the tables; it is created if
	// missing. Lower-case letters, digits and underscores. Defaults to
	// "public".
	Schema string
	// TablePrefix starts every table name. Lower-case letters, digits and
	// underscores. Defaults to "bmckit_".
	TablePrefix string
	// TombstoneRevisions is how many revisions a deleted key is remembered
	// for the change feed before an automatic Compact forgets it (checked
	// every 256 deletes of this process); a Follower further behind
	// re-lists. Defaults to 100000; a negative value leaves compaction to
	// the caller.
	TombstoneRevisions int64
	// Logger receives migration messages. Defaults to logr.Discard().
	Logger logr.Logger
	// CloseDB makes Close close the *sql.DB too. Defaults to false (the
	// caller owns the DB); storage/sqlstore/postgres sets it.
	CloseDB bool
	// IdleInTransactionTimeout bounds how long PostgreSQL lets one of the
	// store's transactions (a group commit, a compaction, the migrations)
	// wait for this process between statements: SET LOCAL
	// idle_in_transaction_session_timeout. Every write holds the store's
	// revision-counter row lock until it commits, so a process paused
	// (SIGSTOP, a frozen VM, a lost network) inside such a transaction would
	// otherwise stall the writes of every replica sharing the store until it
	// resumes, or until TCP keepalive notices (hours by default), and their
	// leases would lapse meanwhile. PostgreSQL ends the paused process's
	// session instead; its transaction rolls back, and the process sees an
	// error (storage.ErrOutcomeUnknown when COMMIT was what failed) when it
	// resumes. A healthy process issues its statements back to back, so
	// this never fires on it. Keep it well below the shortest lease that
	// replicas hold through this store (job.Config.LeaseDuration,
	// syslock.StoreLockerConfig.LeaseDuration). It costs one statement per
	// shared transaction (docs/benchmarks.md). Defaults to 5 seconds; a
	// negative value leaves the session's own setting alone (for a host
	// that sets it for its role: ALTER ROLE ... SET
	// idle_in_transaction_session_timeout).
	IdleInTransactionTimeout time.Duration
}

// DefaultIdleInTransactionTimeout is Options.IdleInTransactionTimeout's
// default: a sixth of the job Runner's default 30-second lease, and far
// beyond the gap between two statements of a healthy process.
const DefaultIdleInTransactionTimeout = 5 * time.Second

// Store is a storage.Store in PostgreSQL. Safe for concurrent use by many
// goroutines and many processes sharing the database.
type Store struct {
	db      *sql.DB
	schema  string
	prefix  string
	log     logr.Logger
	closeDB bool
	// setIdleTimeout is the SET LOCAL that starts each transaction ("" when
	// Options.IdleInTransactionTimeout is negative).
	setIdleTimeout string
	// commits groups this process's concurrent writes into shared
	// transactions (see commit.go).
	commits *groupcommit.Committer[*writeOp]
	compact *autocompact.Policy
	// pipelined counts the batches committed by commitPipelined (tests).
	pipelined atomic.Int64

	// Queries with the schema and prefix filled in.
	qGet, qList, qListRange, qInsert, qUpdate, qDelete, qState, qChanges, qCompact, qSetCompacted string
	// The pipelined batch's statements (pipeline.go).
	qTake, qInserts, qUpdates, qDeletes string
}

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// New returns a Store on db, a PostgreSQL connection pool, after applying
// pending migrations.
func New(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	s := &Store{db: db, schema: opts.Schema, prefix: opts.TablePrefix, log: opts.Logger, closeDB: opts.CloseDB}
	s.commits = groupcommit.New(s.commitBatch)
	s.compact = autocompact.New(opts.TombstoneRevisions)
	if s.schema == "" {
		s.schema = "public"
	}
	if s.prefix == "" {
		s.prefix = "bmckit_"
	}
	if db == nil {
		return nil, fmt.Errorf("sqlstore: New: db is nil; open a PostgreSQL *sql.DB first or use storage/sqlstore/postgres.Open")
	}
	if !identRE.MatchString(s.schema) {
		return nil, fmt.Errorf("sqlstore: Options.Schema %q: want 1-40 lower-case letters, digits or underscores, not starting with a digit", s.schema)
	}
	if !identRE.MatchString(s.prefix) {
		return nil, fmt.Errorf("sqlstore: Options.TablePrefix %q: want 1-40 lower-case letters, digits or underscores, not starting with a digit", s.prefix)
	}
	if s.log.GetSink() == nil {
		s.log = logr.Discard()
	}
	switch idle := opts.IdleInTransactionTimeout; {
	case idle == 0:
		s.setIdleTimeout = setIdleTimeout(DefaultIdleInTransactionTimeout)
	case idle > 0 && idle < time.Millisecond:
		return nil, fmt.Errorf("sqlstore: Options.IdleInTransactionTimeout %v: want at least 1ms (PostgreSQL counts milliseconds), 0 for the default or negative to leave the session's setting", idle)
	case idle > 0:
		s.setIdleTimeout = setIdleTimeout(idle)
	}
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("sqlstore: migrate schema %s: %w", s.schema, err)
	}
	kv, meta := s.expand("${schema}.${prefix}kv"), s.expand("${schema}.${prefix}meta")
	s.qGet = "SELECT value, revision FROM " + kv + " WHERE key = $1 AND NOT deleted"
	// A key range rather than LIKE: PostgreSQL can use the primary-key index
	// for a range even in a generic plan for a prepared statement, where a
	// LIKE pattern in a parameter gets no index condition.
	s.qList = "SELECT key, value, revision FROM " + kv + " WHERE key >= $1 AND NOT deleted ORDER BY key"
	s.qListRange = "SELECT key, value, revision FROM " + kv + " WHERE key >= $1 AND key < $2 AND NOT deleted ORDER BY key"
	// Each write is one autocommit statement: the WITH clause takes the next
	// revision and the counter row's lock (held until commit, so revisions
	// commit in order), then the record changes by compare-and-swap. The
	// counter moves only if the statement's snapshot says the write can
	// succeed, so a lost compare-and-swap costs a read, not a commit; if a
	// concurrent writer wins in between, the revision is skipped (a gap).
	next := func(cond string) string {
		return "WITH r AS (UPDATE " + meta + " SET revision = revision + 1 WHERE id = 1 AND EXISTS (SELECT 1 FROM " + kv +
			" WHERE key = $1 AND " + cond + ") RETURNING revision) "
	}
	s.qInsert = strings.Replace(next("NOT deleted"), "AND EXISTS", "AND NOT EXISTS", 1) +
		"INSERT INTO " + kv + " AS t (key, value, revision, deleted) SELECT $1, $2, r.revision, false FROM r" +
		" ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, revision = EXCLUDED.revision, deleted = false WHERE t.deleted" +
		" RETURNING t.revision"
	s.qUpdate = next("revision = $3 AND NOT deleted") + "UPDATE " + kv + " SET value = $2, revision = (SELECT revision FROM r)" +
		" WHERE key = $1 AND revision = $3 AND NOT deleted AND EXISTS (SELECT 1 FROM r) RETURNING revision"
	s.qDelete = next("NOT deleted AND ($2 = 0 OR revision = $2)") + "UPDATE " + kv +
		" SET value = ''::bytea, revision = (SELECT revision FROM r), deleted = true" +
		" WHERE key = $1 AND NOT deleted AND ($2 = 0 OR revision = $2) AND EXISTS (SELECT 1 FROM r) RETURNING revision"
	s.qState = "SELECT revision, deleted FROM " + kv + " WHERE key = $1"
	// One statement, so the counter and the rows come from one snapshot.
	s.qChanges = "SELECT m.revision, m.compacted, c.key, c.value, c.revision, c.deleted FROM " + meta + " m LEFT JOIN LATERAL (" +
		"SELECT key, value, revision, deleted FROM " + kv + ` WHERE revision > $1 AND key LIKE $2 ESCAPE '\' ORDER BY revision LIMIT $3` +
		") c ON true WHERE m.id = 1 ORDER BY c.revision"
	// A pipelined batch takes its revisions in one step, then writes each
	// kind of write with one statement over arrays (pipeline.go); each
	// array element carries its write's distance from the batch's last
	// revision (u.off).
	s.qTake = "UPDATE " + meta + " SET revision = revision + $1 WHERE id = 1"
	top := "WITH m AS (SELECT revision AS top FROM " + meta + " WHERE id = 1) "
	s.qInserts = top + "INSERT INTO " + kv + " AS t (key, value, revision, deleted)" +
		" SELECT u.key, u.value, m.top - u.off, false FROM m, unnest($1::text[], $2::bytea[], $3::int8[]) AS u(key, value, off)" +
		" ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, revision = EXCLUDED.revision, deleted = false WHERE t.deleted" +
		" RETURNING t.key, t.revision"
	// An update or a delete also answers, for each write it refused, the
	// record's state before the statement (the main query's snapshot does
	// not see its own CTE's changes): the reason, as of the write's turn.
	refusals := " SELECT w.key, w.revision, true, false FROM w UNION ALL" +
		" SELECT u.key, coalesce(s.revision, 0), false, coalesce(s.deleted, true) FROM u LEFT JOIN w ON w.key = u.key COLLATE \"C\"" +
		" LEFT JOIN " + kv + " s ON s.key = u.key COLLATE \"C\" WHERE w.key IS NULL"
	s.qUpdates = top + ", u AS (SELECT * FROM unnest($1::text[], $2::bytea[], $3::int8[], $4::int8[]) AS u(key, value, off, expected))" +
		", w AS (UPDATE " + kv + " AS t SET value = u.value, revision = m.top - u.off FROM m, u" +
		` WHERE t.key = u.key COLLATE "C" AND t.revision = u.expected AND NOT t.deleted RETURNING t.key, t.revision)` + refusals
	s.qDeletes = top + ", u AS (SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[]) AS u(key, off, expected))" +
		", w AS (UPDATE " + kv + " AS t SET value = ''::bytea, revision = m.top - u.off, deleted = true FROM m, u" +
		` WHERE t.key = u.key COLLATE "C" AND NOT t.deleted AND (u.expected = 0 OR t.revision = u.expected) RETURNING t.key, t.revision)` + refusals
	s.qCompact = "DELETE FROM " + kv + " WHERE deleted AND revision <= $1"
	s.qSetCompacted = "UPDATE " + meta + " SET compacted = $1 WHERE id = 1 AND compacted < $1 AND revision >= $1"
	return s, nil
}

// Close closes the *sql.DB if Options.CloseDB was set.
func (s *Store) Close(ctx context.Context) error {
	if !s.closeDB {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlstore: close: %w", err)
	}
	return nil
}

// DB returns the connection pool, for benchmarks and health checks.
func (s *Store) DB() *sql.DB { return s.db }

// likePrefix escapes LIKE's wildcards in prefix and appends %.
func likePrefix(prefix string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
}

// prefixEnd returns the smallest string greater than every string that
// starts with prefix, in code-point order (the byte order of UTF-8 and of
// the "C" collation): prefix with its last rune incremented, dropping
// trailing U+10FFFF runes. ok is false when there is no bound (an empty
// prefix, or only U+10FFFF runes). prefix is valid UTF-8: keys and prefixes
// come through storage.ValidateKey's rules.
func prefixEnd(prefix string) (end string, ok bool) {
	rs := []rune(prefix)
	for len(rs) > 0 {
		last := rs[len(rs)-1]
		if last == utf8.MaxRune {
			rs = rs[:len(rs)-1]
			continue
		}
		last++
		if last == 0xD800 { // skip the surrogates, which UTF-8 cannot hold
			last = 0xE000
		}
		rs[len(rs)-1] = last
		return string(rs), true
	}
	return "", false
}

// fail wraps err for op on key, preferring the context's error when the
// context ended (drivers report cancellation in their own words).
// fail wraps an error from a statement that was sent. If the caller's ctx
// ended meanwhile, PostgreSQL may still have committed it (an autocommit
// statement commits on the server whatever the client does next), so the
// error says the outcome is unknown rather than "canceled, not written".
func fail(ctx context.Context, op, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%v)", cerr, err)
		}
		err = fmt.Errorf("%w: %w", storage.ErrOutcomeUnknown, err)
	}
	return fmt.Errorf("sqlstore: %s %q: %w", op, key, err)
}

func check(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlstore: %s %q: %w", op, key, err)
	}
	if err := storage.ValidateKey(key); err != nil {
		return fmt.Errorf("sqlstore: %s: %w", op, err)
	}
	return nil
}

// Get returns the record under key, or storage.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (storage.Record, error) {
	if err := check(ctx, "get", key); err != nil {
		return storage.Record{}, err
	}
	r := storage.Record{Key: key}
	err := s.db.QueryRowContext(ctx, s.qGet, key).Scan(&r.Value, &r.Revision)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Record{}, fmt.Errorf("sqlstore: get %q: %w", key, storage.ErrNotFound)
	}
	if err != nil {
		return storage.Record{}, fail(ctx, "get", key, err)
	}
	return r, nil
}

// write runs one write statement returning the new revision, through the
// group committer (commit.go). When the statement changes no record, the
// write was refused: ErrExists for a create, otherwise the record's state
// says ErrNotFound or ErrConflict (writeOp.missed).
func (s *Store) write(ctx context.Context, w *writeOp) (int64, error) {
	if err := s.commits.Do(ctx, w); err != nil {
		return 0, err
	}
	return w.rev, nil
}

// Create stores a new record, or returns storage.ErrExists.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := check(ctx, "create", key); err != nil {
		return 0, err
	}
	if err := storage.ValidateValue(key, value); err != nil {
		return 0, fmt.Errorf("sqlstore: create: %w", err)
	}
	if value == nil {
		value = []byte{}
	}
	return s.write(ctx, s.createOp(ctx, key, value))
}

// Update replaces the value if the revision matches (compare-and-swap).
func (s *Store) Update(ctx context.Context, key string, value []byte, revision int64) (int64, error) {
	if err := check(ctx, "update", key); err != nil {
		return 0, err
	}
	if err := storage.ValidateValue(key, value); err != nil {
		return 0, fmt.Errorf("sqlstore: update: %w", err)
	}
	if value == nil {
		value = []byte{}
	}
	return s.write(ctx, s.updateOp(ctx, key, value, revision))
}

// Delete removes the record if the revision matches, or unconditionally
// when revision is 0. The row stays as a tombstone until Compact.
func (s *Store) Delete(ctx context.Context, key string, revision int64) error {
	if err := check(ctx, "delete", key); err != nil {
		return err
	}
	rev, err := s.write(ctx, s.deleteOp(ctx, key, revision))
	if err != nil {
		return err
	}
	if to := s.compact.AfterDelete(rev); to > 0 {
		// The delete is done; a failed compaction is retried next time.
		if err := s.Compact(ctx, to); err != nil {
			s.log.Error(err, "automatic compaction of tombstones failed", "schema", s.schema)
		}
	}
	return nil
}

// List returns the records under prefix, sorted by key, from one statement
// (a consistent snapshot).
func (s *Store) List(ctx context.Context, prefix string) ([]storage.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: list %q: %w", prefix, err)
	}
	var rows *sql.Rows
	var err error
	if hi, ok := prefixEnd(prefix); ok {
		rows, err = s.db.QueryContext(ctx, s.qListRange, prefix, hi)
	} else {
		rows, err = s.db.QueryContext(ctx, s.qList, prefix)
	}
	if err != nil {
		return nil, fail(ctx, "list", prefix, err)
	}
	defer rows.Close()
	var out []storage.Record
	for rows.Next() {
		var r storage.Record
		if err := rows.Scan(&r.Key, &r.Value, &r.Revision); err != nil {
			return nil, fail(ctx, "list", prefix, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, "list", prefix, err)
	}
	return out, nil
}

// Changes implements storage.ChangeFeed.
func (s *Store) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	if err := ctx.Err(); err != nil {
		return storage.Changes{}, fmt.Errorf("sqlstore: changes under %q: %w", prefix, err)
	}
	if limit <= 0 {
		limit = storage.DefaultChangesLimit
	}
	rows, err := s.db.QueryContext(ctx, s.qChanges, since, likePrefix(prefix), limit)
	if err != nil {
		return storage.Changes{}, fail(ctx, "changes under", prefix, err)
	}
	defer rows.Close()
	var out storage.Changes
	var compacted int64
	for rows.Next() {
		var (
			key     sql.NullString
			value   []byte
			rev     sql.NullInt64
			deleted sql.NullBool
		)
		if err := rows.Scan(&out.Revision, &compacted, &key, &value, &rev, &deleted); err != nil {
			return storage.Changes{}, fail(ctx, "changes under", prefix, err)
		}
		if !key.Valid {
			continue // no rows after since: only the counter came back
		}
		ev := storage.Event{Type: storage.EventPut, Key: key.String, Value: value, Revision: rev.Int64}
		if ev.Value == nil {
			ev.Value = []byte{}
		}
		if deleted.Bool {
			ev.Type, ev.Value = storage.EventDelete, nil
		}
		out.Events = append(out.Events, ev)
	}
	if err := rows.Err(); err != nil {
		return storage.Changes{}, fail(ctx, "changes under", prefix, err)
	}
	if since < compacted {
		return storage.Changes{}, fmt.Errorf("sqlstore: changes under %q: %w", prefix,
			&storage.CompactedError{Since: since, Compacted: compacted})
	}
	if len(out.Events) == limit {
		out.Revision = out.Events[len(out.Events)-1].Revision
	}
	return out, nil
}

// Compact implements storage.Compactor by deleting tombstones with a
// revision up to and including revision.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	tx, err := s.beginTx(ctx)
	if err != nil {
		return fail(ctx, "compact", "", err)
	}
	defer func() { _ = tx.Rollback() }()
	// Cap at the current revision; a no-op if already compacted further.
	var cur, compacted int64
	err = tx.QueryRowContext(ctx, s.expand("SELECT revision, compacted FROM ${schema}.${prefix}meta WHERE id = 1 FOR UPDATE")).Scan(&cur, &compacted)
	if err != nil {
		return fail(ctx, "compact", "", err)
	}
	revision = min(revision, cur)
	if revision <= compacted {
		return nil
	}
	if _, err := tx.ExecContext(ctx, s.qCompact, revision); err != nil {
		return fail(ctx, "compact", "", err)
	}
	if _, err := tx.ExecContext(ctx, s.qSetCompacted, revision); err != nil {
		return fail(ctx, "compact", "", err)
	}
	if err := tx.Commit(); err != nil {
		return fail(ctx, "compact", "", err)
	}
	return nil
}
