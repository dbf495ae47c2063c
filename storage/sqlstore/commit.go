package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/groupcommit"
)

// querier runs a statement on the pool or in a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ querier = (*sql.DB)(nil)
	_ querier = (*sql.Tx)(nil)
)

// writeOp is one write: a statement that returns the new revision in one
// row, or no row when the write is refused, and what a refusal means.
type writeOp struct {
	ctx   context.Context
	op    string // "create", "update", "delete"
	key   string
	value []byte // create, update
	// query and args: the write as one statement (a lone write, and
	// batches on other drivers than pgx).
	query string
	args  []any
	// create: a refusal is ErrExists. Otherwise the record's state tells
	// ErrNotFound from ErrConflict (refused).
	create bool
	// revision is the compare-and-swap's revision (for the conflict's
	// message).
	revision int64
	// rev is the new revision, once written.
	rev int64
	// cur and gone: the record's state when a pipelined batch refused the
	// write (pipeline.go).
	cur  int64
	gone bool
}

func (s *Store) createOp(ctx context.Context, key string, value []byte) *writeOp {
	return &writeOp{ctx: ctx, op: "create", key: key, value: value, query: s.qInsert, args: []any{key, value}, create: true}
}

func (s *Store) updateOp(ctx context.Context, key string, value []byte, revision int64) *writeOp {
	return &writeOp{ctx: ctx, op: "update", key: key, value: value, query: s.qUpdate, args: []any{key, value, revision}, revision: revision}
}

// deleteOp: revision 0 deletes unconditionally.
func (s *Store) deleteOp(ctx context.Context, key string, revision int64) *writeOp {
	return &writeOp{ctx: ctx, op: "delete", key: key, query: s.qDelete, args: []any{key, revision}, revision: revision}
}

// run runs w's statement on q. It returns reject when the write was
// refused and changed nothing (ErrConflict, ErrExists, ErrNotFound, a
// cancelled ctx), or fatal for a database error, after which a transaction
// must not commit; never both.
func (s *Store) run(w *writeOp, q querier) (reject, fatal error) {
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("sqlstore: %s %q: %w", w.op, w.key, err), nil
	}
	err := q.QueryRowContext(w.ctx, w.query, w.args...).Scan(&w.rev)
	if errors.Is(err, sql.ErrNoRows) {
		return s.refused(w, func() (int64, bool, error) {
			var cur int64
			var deleted bool
			err := q.QueryRowContext(w.ctx, s.qState, w.key).Scan(&cur, &deleted)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, true, nil
			}
			return cur, deleted, err
		})
	}
	if err != nil {
		return nil, fail(w.ctx, w.op, w.key, err)
	}
	return nil, nil
}

// refused says why w's statement changed nothing: ErrExists for a create;
// for an update or a delete, ErrNotFound or ErrConflict from the record's
// state, which state reads with a second statement (in the same
// transaction when the write is part of a batch; gone is true for a
// tombstone or no row).
func (s *Store) refused(w *writeOp, state func() (cur int64, gone bool, err error)) (reject, fatal error) {
	why := func(err error) error { return fmt.Errorf("sqlstore: %s %q: %w", w.op, w.key, err) }
	if w.create {
		return why(storage.ErrExists), nil
	}
	cur, gone, err := state()
	switch {
	case err != nil:
		return nil, fail(w.ctx, w.op, w.key, err)
	case gone:
		return why(storage.ErrNotFound), nil
	}
	return why(fmt.Errorf("at revision %d (current %d): %w", w.revision, cur, storage.ErrConflict)), nil
}

// commitBatch commits the writes that queued while the previous commit was
// in flight. Each write holds the store's revision-counter lock until its
// commit, so in PostgreSQL writes to one store never share a WAL flush;
// running a batch in one transaction lets them share it. A lone write runs
// as one autocommit statement. On a pgx connection the batch's statements
// are sent together (pipeline.go); otherwise one round trip each. If the
// shared transaction fails, each write runs alone so that each gets its own
// outcome; if the COMMIT itself fails, every write's outcome is unknown
// (storage.ErrOutcomeUnknown).
func (s *Store) commitBatch(batch []*groupcommit.Op[*writeOp]) {
	if len(batch) == 1 {
		reject, fatal := s.run(batch[0].Fn, s.db)
		batch[0].Err = cmp.Or(fatal, reject)
		return
	}
	switch s.commitPipelined(batch) {
	case batchDone:
		return
	case batchNotPipelined:
		if s.commitInOneTx(batch) {
			return
		}
	}
	for _, o := range batch {
		reject, fatal := s.run(o.Fn, s.db)
		o.Err = cmp.Or(fatal, reject)
	}
}

// commitInOneTx runs the batch's statements one round trip each in one
// transaction. It returns false, having committed nothing, when the
// transaction could not start or a statement failed.
func (s *Store) commitInOneTx(batch []*groupcommit.Op[*writeOp]) bool {
	// The batch outlives any one writer's cancellation; each statement
	// still runs under its own writer's ctx.
	ctx := context.WithoutCancel(batch[0].Ctx)
	tx, err := s.beginTx(ctx)
	if err != nil {
		return false
	}
	for _, o := range batch {
		reject, fatal := s.run(o.Fn, tx)
		if fatal != nil {
			_ = tx.Rollback()
			return false
		}
		o.Err = reject
	}
	if err := tx.Commit(); err != nil {
		commitUnknown(batch, err)
	}
	return true
}

// commitUnknown gives every write of batch "outcome unknown" after its
// COMMIT was sent and answered with an error: the batch may have committed
// (a connection lost after the server committed looks the same). Running
// the writes again could apply them twice (an unconditional delete of a key
// re-created meanwhile).
func commitUnknown(batch []*groupcommit.Op[*writeOp], err error) {
	for _, o := range batch {
		o.Err = fmt.Errorf("sqlstore: commit: %w: %v", storage.ErrOutcomeUnknown, err)
	}
}
