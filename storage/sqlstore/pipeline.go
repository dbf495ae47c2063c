package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bmckit/bmckit/storage/groupcommit"
)

// This file sends a group commit's statements together on a pgx
// connection (docs/storage.md, "Pipelined group commit"). One round trip
// per statement made the Runner's record writes wait on the loopback and
// on the scheduler of a busy machine, not on PostgreSQL: on 2 cores,
// 50-statement transactions ran 4-7k statements/s one round trip each and
// 14-20k pipelined (pgbench, docs/benchmarks.md).
//
// Hand-written on pgconn's Pipeline rather than pgx.Batch: a Batch ends
// with one Sync, and PostgreSQL arms idle_in_transaction_session_timeout
// only at a Sync. A process stopped while its batch is half sent would
// hold the revision counter's lock, and every replica's writes, until it
// resumed. Here each statement is followed by a Sync, so PostgreSQL ends a
// session stopped at any point inside the transaction, as it does for the
// one-round-trip-per-statement path.

// pgxDriverConn is implemented by pgx's database/sql connection
// (stdlib.Conn). Checked by method so that this package registers no
// database/sql driver.
type pgxDriverConn interface {
	Conn() *pgx.Conn
}

type batchOutcome int

const (
	// batchDone: every write of the batch has its outcome.
	batchDone batchOutcome = iota
	// batchNotPipelined: the connection is not pgx's; nothing was sent.
	batchNotPipelined
	// batchFailed: the transaction could not start or a statement failed;
	// nothing was committed.
	batchFailed
)

// commitPipelined runs the batch in one transaction with its statements
// sent together, when the pool's connections are pgx's.
func (s *Store) commitPipelined(batch []*groupcommit.Op[*writeOp]) (outcome batchOutcome) {
	base := context.WithoutCancel(batch[0].Ctx)
	// A writer's cancelled ctx cancels the statements in flight (and the
	// batch falls back to one write at a time), as on the other path where
	// each statement runs under its writer's ctx; the COMMIT does not
	// depend on any one writer.
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	for _, o := range batch {
		if o.Fn.ctx.Err() == nil { // an ended one is not sent
			stop := context.AfterFunc(o.Fn.ctx, cancel)
			defer stop()
		}
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return batchFailed
	}
	defer conn.Close()
	outcome = batchNotPipelined
	defer func() {
		if outcome == batchDone {
			s.pipelined.Add(1)
		}
	}()
	_ = conn.Raw(func(dc any) error {
		pc, ok := dc.(pgxDriverConn)
		if !ok {
			return nil
		}
		var keep bool
		outcome, keep = s.pipeline(ctx, base, pc.Conn(), batch)
		if !keep {
			return driver.ErrBadConn // database/sql closes the connection
		}
		return nil
	})
	return outcome
}

// pipeline runs the batch on c: BEGIN with the idle timeout, then every
// write's statement and a Sync, sent together, then the reads that tell a
// refused update or delete's reason, then COMMIT (under base, which no
// writer cancels). keep is false when c may be left inside a transaction
// or broken.
func (s *Store) pipeline(ctx, base context.Context, c *pgx.Conn, batch []*groupcommit.Op[*writeOp]) (outcome batchOutcome, keep bool) {
	begin := "BEGIN"
	if s.setIdleTimeout != "" {
		begin += "; " + s.setIdleTimeout
	}
	if _, err := c.Exec(ctx, begin); err != nil { // no arguments: one simple-protocol round trip
		return batchFailed, false
	}
	failed := func() (batchOutcome, bool) {
		_, err := c.Exec(base, "ROLLBACK")
		return batchFailed, err == nil
	}
	sds := make(map[string]*pgconn.StatementDescription, 3)
	for _, o := range batch {
		if _, ok := sds[o.Fn.query]; ok {
			continue
		}
		sd, err := c.Prepare(ctx, o.Fn.query, o.Fn.query) // cached on the connection after its first batch
		if err != nil {
			return failed()
		}
		sds[o.Fn.query] = sd
	}

	p := c.PgConn().StartPipeline(ctx)
	var eqb pgx.ExtendedQueryBuilder
	sent := make([]*groupcommit.Op[*writeOp], 0, len(batch))
	for _, o := range batch {
		w := o.Fn
		if err := w.ctx.Err(); err != nil {
			o.Err = fmt.Errorf("sqlstore: %s %q: %w", w.op, w.key, err)
			continue
		}
		sd := sds[w.query]
		if err := eqb.Build(c.TypeMap(), sd, w.args); err != nil {
			_ = p.Close()
			return failed()
		}
		// SendQueryStatement keeps the result formats until the answer is
		// read; eqb reuses its slice.
		p.SendQueryStatement(sd, eqb.ParamValues, eqb.ParamFormats, append([]int16(nil), eqb.ResultFormats...))
		p.SendPipelineSync()
		sent = append(sent, o)
	}
	if err := p.Flush(); err != nil {
		return batchFailed, false // pgx closed the connection: PostgreSQL rolls back
	}
	var missed []*writeOp
	for _, o := range sent {
		w := o.Fn
		found, err := readRevision(p, c, &w.rev)
		if err == nil {
			err = readSync(p)
		}
		if err != nil {
			_ = p.Close()
			if c.PgConn().IsClosed() {
				return batchFailed, false
			}
			return failed()
		}
		if !found {
			missed = append(missed, w)
		}
		o.Err = nil
	}
	if err := p.Close(); err != nil {
		return batchFailed, false
	}
	for _, w := range missed {
		reject, fatal := s.refused(w, func() (int64, bool, error) {
			var cur int64
			var deleted bool
			err := c.QueryRow(ctx, s.qState, w.key).Scan(&cur, &deleted)
			if errors.Is(err, pgx.ErrNoRows) {
				return 0, true, nil
			}
			return cur, deleted, err
		})
		if fatal != nil {
			return failed()
		}
		for _, o := range sent {
			if o.Fn == w {
				o.Err = reject
			}
		}
	}
	tag, err := c.Exec(base, "COMMIT")
	switch {
	case err != nil:
		commitUnknown(sent, err)
		return batchDone, false
	case tag.String() != "COMMIT":
		// PostgreSQL answers COMMIT of a failed transaction with ROLLBACK:
		// nothing was committed.
		return batchFailed, true
	}
	return batchDone, true
}

// readRevision reads one write's answer from p: the new revision in the
// first column of its one row (found), or no row. A statement's error is
// returned.
func readRevision(p *pgconn.Pipeline, c *pgx.Conn, rev *int64) (found bool, err error) {
	res, err := p.GetResults()
	if err != nil {
		return false, err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return false, fmt.Errorf("sqlstore: pipeline: want a statement's result, got %T", res)
	}
	for rr.NextRow() {
		if found {
			continue
		}
		vals := rr.Values()
		fds := rr.FieldDescriptions()
		if len(vals) != 1 || len(fds) != 1 {
			_, _ = rr.Close()
			return false, fmt.Errorf("sqlstore: pipeline: want one column, got %d", len(vals))
		}
		if err := c.TypeMap().Scan(fds[0].DataTypeOID, fds[0].Format, vals[0], rev); err != nil {
			_, _ = rr.Close()
			return false, fmt.Errorf("sqlstore: pipeline: revision: %w", err)
		}
		found = true
	}
	_, err = rr.Close()
	return found, err
}

// readSync reads the Sync that follows each statement.
func readSync(p *pgconn.Pipeline) error {
	res, err := p.GetResults()
	if err != nil {
		return err
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("sqlstore: pipeline: want a sync, got %T", res)
	}
	return nil
}
