package bootstate

import (
	"container/heap"
	"sync"
	"time"
)

// deadlines is the in-memory queue of attempt deadlines [Tracker.Run] fires.
// It is a cache: the deadline itself is in the stored record, so a restarted
// tracker rebuilds the queue from the store.
type deadlines struct {
	mu   sync.Mutex
	h    deadlineHeap
	in   map[deadline]bool // what h holds, to skip duplicates
	kick chan struct{}     // buffered(1): a new deadline was added
}

type deadline struct {
	at         time.Time
	systemUUID string
	attemptID  string
}

type deadlineHeap []deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}

func newDeadlines() *deadlines {
	return &deadlines{in: map[deadline]bool{}, kick: make(chan struct{}, 1)}
}

// add queues x unless it is queued already.
func (d *deadlines) add(x deadline) {
	x.at = x.at.UTC()
	d.mu.Lock()
	if d.in[x] {
		d.mu.Unlock()
		return
	}
	d.in[x] = true
	heap.Push(&d.h, x)
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// next returns the earliest deadline, if any.
func (d *deadlines) next() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.h) == 0 {
		return time.Time{}, false
	}
	return d.h[0].at, true
}

// due pops every deadline at or before now.
func (d *deadlines) due(now time.Time) []deadline {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []deadline
	for len(d.h) > 0 && !d.h[0].at.After(now) {
		x := heap.Pop(&d.h).(deadline)
		delete(d.in, x)
		out = append(out, x)
	}
	return out
}
