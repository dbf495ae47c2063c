// Package dueheap is a min-heap of items ordered by when they are due, whose
// items can be re-keyed or removed while in it: the timer heap of the job
// Runner's and the machine monitor's event loops, where a waiting job or
// machine is an entry, not a goroutine.
package dueheap

import (
	"container/heap"
	"time"
)

// Entry is the heap's bookkeeping, embedded in (or held by) each item.
type Entry struct {
	due time.Time
	idx int // position + 1; 0 when not in a heap
}

// Due is when the item is due (the last time it was set).
func (e *Entry) Due() time.Time { return e.due }

// Queued reports whether the item is in a heap.
func (e *Entry) Queued() bool { return e.idx > 0 }

// Item is anything with an Entry.
type Item interface{ DueEntry() *Entry }

// Heap orders items by due time. The zero value is empty and ready. Not
// safe for concurrent use.
type Heap[T Item] struct{ items heapOf[T] }

// Len is the number of items in the heap.
func (h *Heap[T]) Len() int { return len(h.items) }

// Set makes x due at t: it is added, or moved if it is in the heap already.
func (h *Heap[T]) Set(x T, t time.Time) {
	e := x.DueEntry()
	e.due = t
	if e.idx > 0 {
		heap.Fix(&h.items, e.idx-1)
		return
	}
	heap.Push(&h.items, x)
}

// Remove takes x out of the heap, if it is in it.
func (h *Heap[T]) Remove(x T) {
	if e := x.DueEntry(); e.idx > 0 {
		heap.Remove(&h.items, e.idx-1)
	}
}

// Peek returns the item due first, if any.
func (h *Heap[T]) Peek() (T, bool) {
	if len(h.items) == 0 {
		var zero T
		return zero, false
	}
	return h.items[0], true
}

// Pop removes and returns the item due first; the heap must not be empty.
func (h *Heap[T]) Pop() T { return heap.Pop(&h.items).(T) }

// heapOf implements container/heap's interface.
type heapOf[T Item] []T

func (h heapOf[T]) Len() int { return len(h) }
func (h heapOf[T]) Less(i, j int) bool {
	return h[i].DueEntry().due.Before(h[j].DueEntry().due)
}
func (h heapOf[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].DueEntry().idx = i + 1
	h[j].DueEntry().idx = j + 1
}
func (h *heapOf[T]) Push(x any) {
	t := x.(T)
	t.DueEntry().idx = len(*h) + 1
	*h = append(*h, t)
}
func (h *heapOf[T]) Pop() any {
	old := *h
	t := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	*h = old[:len(old)-1]
	t.DueEntry().idx = 0
	return t
}
