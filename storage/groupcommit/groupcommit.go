package groupcommit

import (
	"context"
	"fmt"
	"sync"
)

// Op is one write waiting in a batch. The commit function reads Ctx and Fn
// and must set Err for every Op of the batch it is given.
type Op[F any] struct {
	Ctx context.Context
	Fn  F
	Err error

	// Guarded by Committer.mu.
	taken, finished, promoted bool
	signal                    chan struct{} // finished or promoted
}

// Committer batches writes for one commit function. Hand-written rather
// than bbolt's DB.Batch, which waits up to MaxBatchDelay for company and so
// cuts a lone writer's rate, and which only fits bbolt.
type Committer[F any] struct {
	commit  func(batch []*Op[F])
	mu      sync.Mutex
	leading bool
	queue   []*Op[F]
}

// New returns a Committer that commits batches with commit. commit runs on
// one goroutine at a time, with the ops in arrival order.
func New[F any](commit func(batch []*Op[F])) *Committer[F] {
	return &Committer[F]{commit: commit}
}

// Do queues fn, waits until the batch holding it has been committed and
// returns the Err the commit function set. If ctx ends before a leader took
// the write, Do returns ctx.Err() and fn never runs.
func (c *Committer[F]) Do(ctx context.Context, fn F) error {
	o := &Op[F]{Ctx: ctx, Fn: fn, signal: make(chan struct{}, 1)}
	c.mu.Lock()
	if !c.leading {
		c.leading = true
		c.mu.Unlock()
		c.lead(o)
		return o.Err
	}
	c.queue = append(c.queue, o)
	c.mu.Unlock()
	for {
		select {
		case <-o.signal:
		case <-ctx.Done():
			c.mu.Lock()
			if !o.taken && !o.promoted {
				for i, q := range c.queue {
					if q == o {
						c.queue = append(c.queue[:i], c.queue[i+1:]...)
						break
					}
				}
				c.mu.Unlock()
				return ctx.Err()
			}
			c.mu.Unlock()
			<-o.signal
		}
		c.mu.Lock()
		finished, promoted := o.finished, o.promoted
		c.mu.Unlock()
		if finished {
			return o.Err
		}
		if promoted {
			c.lead(o)
			return o.Err
		}
	}
}

// Waiting returns the number of writes queued behind the commit in flight
// (for metrics and tests).
func (c *Committer[F]) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// lead commits first and everything queued, then passes the leadership on.
func (c *Committer[F]) lead(first *Op[F]) {
	c.mu.Lock()
	batch := append([]*Op[F]{first}, c.queue...)
	c.queue = nil
	for _, o := range batch {
		o.taken = true
	}
	c.mu.Unlock()

	// If commit panics, the writers of this batch get an error and the
	// leadership moves on before the panic continues, so nobody waits
	// forever.
	defer func() {
		if p := recover(); p != nil {
			for _, o := range batch {
				o.Err = fmt.Errorf("groupcommit: commit panicked: %v", p)
			}
			c.handOver(batch)
			panic(p)
		}
	}()
	c.commit(batch)
	c.handOver(batch)
}

// handOver marks batch finished, wakes its writers and passes the
// leadership to the first queued write, if any.
func (c *Committer[F]) handOver(batch []*Op[F]) {
	c.mu.Lock()
	for _, o := range batch {
		o.finished = true
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		next.promoted = true
		next.signal <- struct{}{}
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	for _, o := range batch[1:] {
		o.signal <- struct{}{}
	}
}
