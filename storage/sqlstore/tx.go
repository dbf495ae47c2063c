package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"
)

// beginTx starts one of the store's transactions and bounds how long
// PostgreSQL lets it sit idle waiting for this process
// (Options.IdleInTransactionTimeout): a paused process must not hold the
// revision counter's row lock, and with it every replica's writes.
func (s *Store) beginTx(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if s.setIdleTimeout != "" {
		if _, err := tx.ExecContext(ctx, s.setIdleTimeout); err != nil {
			_ = tx.Rollback()
			return nil, err
		}
	}
	return tx, nil
}

// setIdleTimeout is the statement that sets idle_in_transaction_session_timeout
// to d for the current transaction only (SET LOCAL: the connection goes back
// to the pool, or to a PgBouncer in transaction mode, unchanged). SET takes
// no parameters; the value is an integer this function formats.
func setIdleTimeout(d time.Duration) string {
	ms := min(d.Milliseconds(), math.MaxInt32) // the setting is an int of milliseconds; New refused under 1 ms
	return fmt.Sprintf("SET LOCAL idle_in_transaction_session_timeout = %d", ms)
}
