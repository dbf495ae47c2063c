package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
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

// writeFn is one write's statements. It returns reject when the write was
// refused and changed nothing (ErrConflict, ErrExists, ErrNotFound, a
// cancelled ctx), or fatal for a database error, after which a transaction
// must not commit; never both.
type writeFn func(q querier) (reject, fatal error)

// commitBatch commits the writes that queued while the previous commit was
// in flight. Each write holds the store's revision-counter lock until its
// commit, so in PostgreSQL writes to one store never share a WAL flush;
// running a batch in one transaction lets them share it. A lone write runs
// as one autocommit statement. If the shared transaction fails, each write
// runs alone so that each gets its own outcome; if the COMMIT itself fails,
// every write's outcome is unknown (storage.ErrOutcomeUnknown).
func (s *Store) commitBatch(batch []*groupcommit.Op[writeFn]) {
	if len(batch) == 1 {
		reject, fatal := batch[0].Fn(s.db)
		batch[0].Err = cmp.Or(fatal, reject)
		return
	}
	// The batch outlives any one writer's cancellation; each statement
	// still runs under its own writer's ctx.
	ctx := context.WithoutCancel(batch[0].Ctx)
	if tx, err := s.beginTx(ctx); err == nil {
		ok := true
		for _, o := range batch {
			reject, fatal := o.Fn(tx)
			if fatal != nil {
				ok = false
				break
			}
			o.Err = reject
		}
		if ok {
			err := tx.Commit()
			if err == nil {
				return
			}
			// COMMIT was sent and its answer is an error: the batch may have
			// committed (a connection lost after the server committed looks
			// the same). Running the writes again could apply them twice
			// (an unconditional delete of a key re-created meanwhile), so
			// every write gets "outcome unknown" instead.
			for _, o := range batch {
				o.Err = fmt.Errorf("sqlstore: commit: %w: %v", storage.ErrOutcomeUnknown, err)
			}
			return
		}
		_ = tx.Rollback()
	}
	for _, o := range batch {
		reject, fatal := o.Fn(s.db)
		o.Err = cmp.Or(fatal, reject)
	}
}
