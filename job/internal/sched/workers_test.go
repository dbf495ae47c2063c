package sched

import (
	"fmt"
	"testing"
	"time"
)

// TestRetireIdle: the loop stops exactly the workers idle for
// idleWorkerTimeout, oldest first, and keeps the others in order.
func TestRetireIdle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var l loop
	var ws []*stepWorker
	for i, age := range []time.Duration{5 * time.Second, idleWorkerTimeout, idleWorkerTimeout - 1, 0} {
		w := &stepWorker{work: make(chan stepWork, 1), since: t0.Add(-age)}
		w.work <- stepWork{h: &heldSystem{sys: fmt.Sprint(i)}} // marker: replaced by a zero stepWork if retired
		<-w.work
		ws = append(ws, w)
		l.idle = append(l.idle, w)
	}
	l.retireIdle(t0)
	if len(l.idle) != 2 || l.idle[0] != ws[2] || l.idle[1] != ws[3] {
		t.Fatalf("idle after retiring: %v, want the last two workers", l.idle)
	}
	for i, w := range ws {
		select {
		case sw := <-w.work:
			if i >= 2 || sw.h != nil {
				t.Fatalf("worker %d got %+v", i, sw)
			}
		default:
			if i < 2 {
				t.Fatalf("worker %d idle for %v was not retired", i, t0.Sub(w.since))
			}
		}
	}
}

// TestRetireIdleBeyondMax: more than maxIdleWorkers idle workers, however
// fresh, are cut down to maxIdleWorkers, the longest idle first.
func TestRetireIdleBeyondMax(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var l loop
	var ws []*stepWorker
	for i := range maxIdleWorkers + 10 {
		w := &stepWorker{work: make(chan stepWork, 1), since: t0.Add(time.Duration(i))}
		ws = append(ws, w)
		l.idle = append(l.idle, w)
	}
	l.retireIdle(t0.Add(time.Second))
	if len(l.idle) != maxIdleWorkers || l.idle[0] != ws[10] {
		t.Fatalf("%d idle left, first %p; want %d from %p", len(l.idle), l.idle[0], maxIdleWorkers, ws[10])
	}
	for i, w := range ws {
		if got := len(w.work); (got == 1) != (i < 10) {
			t.Fatalf("worker %d: %d quit messages", i, got)
		}
	}
}
