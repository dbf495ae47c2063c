package sqlstore

import (
	"cmp"
	"context"
	"database/sql"

	"github.com/bmckit/bmckit/internal/groupcommit"
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
// runs alone so that each gets its own outcome.
func (s *Store) commitBatch(batch []*groupcommit.Op[writeFn]) {
	if len(batch) == 1 {
		reject, fatal := batch[0].Fn(s.db)
		batch[0].Err = cmp.Or(fatal, reject)
		return
	}
	// The batch outlives any one writer's cancellation; each statement
	// still runs under its own writer's ctx.
	ctx := context.WithoutCancel(batch[0].Ctx)
	if tx, err := s.db.BeginTx(ctx, nil); err == nil {
		ok := true
		for _, o := range batch {
			reject, fatal := o.Fn(tx)
			if fatal != nil {
				ok = false
				break
			}
			o.Err = reject
		}
		if ok && tx.Commit() == nil {
			return
		}
		_ = tx.Rollback()
	}
	for _, o := range batch {
		reject, fatal := o.Fn(s.db)
		o.Err = cmp.Or(fatal, reject)
	}
}
