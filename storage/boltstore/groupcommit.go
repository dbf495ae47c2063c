package boltstore

import (
	"context"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// groupCommit commits concurrent writes together: one bbolt transaction and
// one fsync for every write that arrived while the previous commit was
// flushing. A lone writer commits at once (no delay), unlike bbolt's
// DB.Batch, which waits up to MaxBatchDelay for company and so would cut a
// single writer's rate; that is why this is hand-written.
//
// The first writer to arrive while nobody commits becomes the leader: it
// takes every queued write into its transaction, commits, and hands the
// leadership to the first write queued meanwhile. Queued writers whose ctx
// ends before a leader took them leave without writing.
type groupCommit struct {
	db      *bolt.DB
	mu      sync.Mutex
	leading bool
	queue   []*writeOp
}

// writeOp is one write. fn must return reject (the write is refused and
// changed nothing: ErrConflict, a cancelled ctx) or fatal (a bbolt error
// after it may have changed the transaction), never both.
type writeOp struct {
	ctx context.Context
	fn  func(tx *bolt.Tx) (reject, fatal error)
	err error

	// Guarded by groupCommit.mu.
	taken, finished, promoted bool
	signal                    chan struct{} // finished or promoted
}

// do runs fn in a transaction shared with concurrent writes and returns its
// error once the transaction is on disk.
func (g *groupCommit) do(ctx context.Context, fn func(tx *bolt.Tx) (reject, fatal error)) error {
	o := &writeOp{ctx: ctx, fn: fn, signal: make(chan struct{}, 1)}
	g.mu.Lock()
	if !g.leading {
		g.leading = true
		g.mu.Unlock()
		g.lead(o)
		return o.err
	}
	g.queue = append(g.queue, o)
	g.mu.Unlock()
	for {
		select {
		case <-o.signal:
		case <-ctx.Done():
			g.mu.Lock()
			if !o.taken && !o.promoted {
				for i, q := range g.queue {
					if q == o {
						g.queue = append(g.queue[:i], g.queue[i+1:]...)
						break
					}
				}
				g.mu.Unlock()
				return ctx.Err()
			}
			g.mu.Unlock()
			<-o.signal
		}
		g.mu.Lock()
		finished, promoted := o.finished, o.promoted
		g.mu.Unlock()
		if finished {
			return o.err
		}
		if promoted {
			g.lead(o)
			return o.err
		}
	}
}

// lead commits first and everything queued, then passes the leadership on.
func (g *groupCommit) lead(first *writeOp) {
	g.mu.Lock()
	batch := append([]*writeOp{first}, g.queue...)
	g.queue = nil
	for _, o := range batch {
		o.taken = true
	}
	g.mu.Unlock()

	err := g.db.Update(func(tx *bolt.Tx) error {
		for _, o := range batch {
			reject, fatal := o.fn(tx)
			if fatal != nil {
				return fatal
			}
			o.err = reject
		}
		return nil
	})
	if err != nil {
		// The shared transaction failed: run each write alone so that each
		// gets its own outcome (what bbolt's DB.Batch does too).
		for _, o := range batch {
			o.err = g.db.Update(func(tx *bolt.Tx) error {
				reject, fatal := o.fn(tx)
				if fatal != nil {
					return fatal
				}
				return reject // rolls back nothing: a reject changed nothing
			})
		}
	}

	g.mu.Lock()
	for _, o := range batch {
		o.finished = true
	}
	if len(g.queue) > 0 {
		next := g.queue[0]
		g.queue = g.queue[1:]
		next.promoted = true
		next.signal <- struct{}{}
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	for _, o := range batch[1:] {
		o.signal <- struct{}{}
	}
}
