package sqlstore

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bmckit/bmckit/storage/groupcommit"
)

// This file commits a group commit's writes on a pgx connection in one
// round trip (docs/storage.md, "Pipelined group commit" and "Writes over
// arrays"): one statement takes the batch's revisions, then one statement
// per kind of write (create, update, delete) carries all the writes of
// that kind as arrays. One statement per write, even pipelined, cost
// PostgreSQL about 70 µs of CPU per write at fleet scale (a plan, an
// executor start and the counter row updated again for each), and that,
// on a machine whose 2 cores it shares with the client, set the Runner's
// pace at 500 ms per BMC call (docs/benchmarks.md).
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

// pipeline runs the batch on c: BEGIN with the idle timeout, then the
// statements of batchPlan (the revisions taken, then each kind of write
// over arrays; an update or a delete also answers the state of each
// record it refused, which tells ErrNotFound from ErrConflict), each
// followed by a Sync, sent together; then COMMIT (under base, which no
// writer cancels). keep is false when c may be left inside a transaction
// or broken.
func (s *Store) pipeline(ctx, base context.Context, c *pgx.Conn, batch []*groupcommit.Op[*writeOp]) (outcome batchOutcome, keep bool) {
	live := make([]*groupcommit.Op[*writeOp], 0, len(batch))
	for _, o := range batch {
		if err := o.Fn.ctx.Err(); err != nil { // an ended one is not sent
			o.Err = fmt.Errorf("sqlstore: %s %q: %w", o.Fn.op, o.Fn.key, err)
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return batchDone, true
	}
	stmts := s.batchPlan(live)

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
	sds := make(map[string]*pgconn.StatementDescription, 4)
	for _, st := range stmts {
		if _, ok := sds[st.query]; ok {
			continue
		}
		sd, err := c.Prepare(ctx, st.query, st.query) // cached on the connection after its first batch
		if err != nil {
			return failed()
		}
		sds[st.query] = sd
	}

	p := c.PgConn().StartPipeline(ctx)
	var eqb pgx.ExtendedQueryBuilder
	for _, st := range stmts {
		sd := sds[st.query]
		if err := eqb.Build(c.TypeMap(), sd, st.args); err != nil {
			_ = p.Close()
			return failed()
		}
		// SendQueryStatement keeps the result formats until the answer is
		// read; eqb reuses its slice.
		p.SendQueryStatement(sd, eqb.ParamValues, eqb.ParamFormats, append([]int16(nil), eqb.ResultFormats...))
		p.SendPipelineSync()
	}
	if err := p.Flush(); err != nil {
		return batchFailed, false // pgx closed the connection: PostgreSQL rolls back
	}
	for _, st := range stmts {
		err := readWritten(p, c, st.written)
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
	}
	if err := p.Close(); err != nil {
		return batchFailed, false
	}
	for _, o := range live {
		w := o.Fn
		if w.rev != 0 {
			o.Err = nil
			continue
		}
		o.Err, _ = s.refused(w, func() (int64, bool, error) { return w.cur, w.gone, nil })
	}
	tag, err := c.Exec(base, "COMMIT")
	switch {
	case err != nil:
		commitUnknown(live, err)
		return batchDone, false
	case tag.String() != "COMMIT":
		// PostgreSQL answers COMMIT of a failed transaction with ROLLBACK:
		// nothing was committed.
		return batchFailed, true
	}
	return batchDone, true
}

// batchStmt is one statement of a pipelined batch. written maps a key to
// the write of this statement that the returned row of that key is for
// (nil for the statement that takes the revisions).
type batchStmt struct {
	query   string
	args    []any
	written map[string]*writeOp
}

// maxStatementValues bounds the bytes of values one statement of a
// pipelined batch carries: PostgreSQL refuses an array over 1 GB, and a
// batch of writes near storage.MaxValueSize would reach it. A kind of
// write whose values exceed it in one round takes more statements. A
// variable for tests.
var maxStatementValues = 64 << 20

// batchPlan turns the batch's writes (in arrival order) into statements:
// first one that moves the revision counter by the number of writes (the
// batch's revisions, taken under the counter row's lock as a lone write
// takes one), then one statement per kind of write over arrays, in
// rounds: a key written twice in the batch goes to the next round, so
// that each statement touches a key at most once and a key's writes run
// in their order. The i-th write (from 1) gets revision top-n+i, where top
// is the counter after the first statement: revisions increase in arrival
// order, and a refused write leaves a gap, as on the other paths.
func (s *Store) batchPlan(live []*groupcommit.Op[*writeOp]) []batchStmt {
	n := int64(len(live))
	type arrays struct {
		keys          []string
		values        [][]byte
		offs, expects []int64
		written       map[string]*writeOp
		bytes         int
	}
	var rounds [][3][]*arrays // per round and kind (create, update, delete): its statements
	seen := make(map[string]int, len(live))
	for i, o := range live {
		w := o.Fn
		w.rev, w.cur, w.gone = 0, 0, true
		r := seen[w.key]
		seen[w.key] = r + 1
		if r == len(rounds) {
			rounds = append(rounds, [3][]*arrays{})
		}
		kind := 1
		switch {
		case w.create:
			kind = 0
		case w.op == "delete":
			kind = 2
		}
		chunks := rounds[r][kind]
		if len(chunks) == 0 || chunks[len(chunks)-1].bytes+len(w.value) > maxStatementValues && len(chunks[len(chunks)-1].keys) > 0 {
			chunks = append(chunks, &arrays{written: make(map[string]*writeOp)})
			rounds[r][kind] = chunks
		}
		a := chunks[len(chunks)-1]
		a.keys = append(a.keys, w.key)
		a.values = append(a.values, w.value)
		a.offs = append(a.offs, n-1-int64(i))
		a.expects = append(a.expects, w.revision)
		a.written[w.key] = w
		a.bytes += len(w.value)
	}
	stmts := []batchStmt{{query: s.qTake, args: []any{n}}}
	for _, r := range rounds {
		for _, a := range r[0] {
			stmts = append(stmts, batchStmt{query: s.qInserts, args: []any{a.keys, a.values, a.offs}, written: a.written})
		}
		for _, a := range r[1] {
			stmts = append(stmts, batchStmt{query: s.qUpdates, args: []any{a.keys, a.values, a.offs, a.expects}, written: a.written})
		}
		for _, a := range r[2] {
			stmts = append(stmts, batchStmt{query: s.qDeletes, args: []any{a.keys, a.offs, a.expects}, written: a.written})
		}
	}
	return stmts
}

// readWritten reads one statement's answer from p: for each write it
// made, a row (key, new revision, true, false) that sets the write's rev;
// for each it refused (updates and deletes), a row (key, the record's
// revision, false, whether it is absent or deleted). A statement's error
// is returned.
func readWritten(p *pgconn.Pipeline, c *pgx.Conn, written map[string]*writeOp) error {
	res, err := p.GetResults()
	if err != nil {
		return err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("sqlstore: pipeline: want a statement's result, got %T", res)
	}
	var (
		key           string
		rev           int64
		wrote, absent bool
	)
	dst := []any{&key, &rev, &wrote, &absent}
	for rr.NextRow() {
		vals := rr.Values()
		fds := rr.FieldDescriptions()
		if len(vals) < 2 || len(vals) > len(dst) || len(fds) != len(vals) {
			_, _ = rr.Close()
			return fmt.Errorf("sqlstore: pipeline: want 2 to 4 columns, got %d", len(vals))
		}
		wrote = true // an insert answers only the rows it wrote
		for i := range vals {
			if err := c.TypeMap().Scan(fds[i].DataTypeOID, fds[i].Format, vals[i], dst[i]); err != nil {
				_, _ = rr.Close()
				return fmt.Errorf("sqlstore: pipeline: column %s: %w", fds[i].Name, err)
			}
		}
		w := written[key]
		if w == nil {
			_, _ = rr.Close()
			return fmt.Errorf("sqlstore: pipeline: a row for %q, which the statement was not given", key)
		}
		if wrote {
			w.rev = rev
		} else {
			w.cur, w.gone = rev, absent
		}
	}
	_, err = rr.Close()
	return err
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
