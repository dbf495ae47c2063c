package bmctest

import (
	"fmt"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Fence is a [bmc.Fence] for driver tests: it admits requests until Close,
// then refuses them with an error wrapping bmc.ErrFenced, and records when
// it admitted each. Put it in a call's ctx with bmc.WithFence to check that
// a driver asks it before every request (the suite's Context/Fenced
// subtests use a closed one) or to measure how long after its last
// admission a request reaches the peer. Safe for concurrent use.
type Fence struct {
	mu       sync.Mutex
	closed   bool
	admitted []time.Time
}

// Admit implements bmc.Fence.
func (f *Fence) Admit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("bmctest: the fence is closed (the lease lapsed): %w", bmc.ErrFenced)
	}
	f.admitted = append(f.admitted, time.Now())
	return nil
}

// Close makes f refuse every request from now on.
func (f *Fence) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

// Admitted returns when f admitted each request so far, in order.
func (f *Fence) Admitted() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.admitted...)
}

// ClosedFence returns a Fence that admits nothing.
func ClosedFence() *Fence {
	f := &Fence{}
	f.Close()
	return f
}
