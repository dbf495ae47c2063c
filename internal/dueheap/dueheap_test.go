package dueheap_test

import (
	"testing"
	"time"

	"github.com/bmckit/bmckit/internal/dueheap"
)

type item struct {
	dueheap.Entry
	name string
}

func (i *item) DueEntry() *dueheap.Entry { return &i.Entry }

func TestOrderRekeyRemove(t *testing.T) {
	t0 := time.Unix(0, 0)
	var h dueheap.Heap[*item]
	a, b, c := &item{name: "a"}, &item{name: "b"}, &item{name: "c"}
	h.Set(a, t0.Add(3*time.Second))
	h.Set(b, t0.Add(1*time.Second))
	h.Set(c, t0.Add(2*time.Second))
	if !a.Queued() || h.Len() != 3 {
		t.Fatal("not queued")
	}
	h.Set(a, t0) // re-keyed, not added twice
	if h.Len() != 3 {
		t.Fatalf("len %d after re-key", h.Len())
	}
	h.Remove(c)
	h.Remove(c) // not in it: nothing
	if c.Queued() {
		t.Fatal("removed item still queued")
	}
	var got []string
	for h.Len() > 0 {
		first, _ := h.Peek()
		p := h.Pop()
		if p != first {
			t.Fatal("Pop differs from Peek")
		}
		got = append(got, p.name)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("order %v, want [a b]", got)
	}
	if _, ok := h.Peek(); ok || a.Queued() {
		t.Fatal("empty heap peeked, or popped item still queued")
	}
}
