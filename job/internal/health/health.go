// Package health judges whether a job package Runner is working, for its
// Healthz: its loop records its turns and the outcomes of its store calls,
// and Check says what is wrong, if anything.
//
// A Runner is unhealthy when Start has not been called or has returned;
// when its loop has not turned over for longer than a lease (it turns over
// at least every ScanInterval, so it is stuck); or when the store has
// failed without a success in between for longer than a lease (its leases
// have lapsed, so it does no work, and a replica with a working store takes
// its systems over). A store outage shorter than a lease is healthy: the
// Runner pauses and resumes on its own, and restarting it would not help.
package health

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// State is what Check reads. The Runner's loop writes it; Check reads it
// from an HTTP server's goroutines. Safe for concurrent use.
type State struct {
	mu           sync.Mutex
	running      bool
	stopped      bool
	beat         time.Time // the loop's last turn
	failingSince time.Time // first store failure since the last success; zero: none
	lastErr      error
}

// Start records the start of the loop at now.
func (h *State) Start(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running, h.beat = true, now
}

// Stop records that the loop returned.
func (h *State) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running, h.stopped = false, true
}

// Turn records one turn of the loop.
func (h *State) Turn(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.beat = now
}

// Store records the outcome of a store call the loop made (a scan, a lease
// renewal).
func (h *State) Store(now time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.failingSince, h.lastErr = time.Time{}, nil
		return
	}
	if h.failingSince.IsZero() {
		h.failingSince = now
	}
	h.lastErr = err
}

// Check returns nil while the Runner is healthy at now, for a Runner whose
// lease is lease; otherwise an error saying why (wrapping the store's last
// error when the store is what failed).
func (h *State) Check(now time.Time, lease time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.running && h.stopped:
		return errors.New("stopped (Start returned)")
	case !h.running:
		return errors.New("not started (call Start, or add it to the manager)")
	case now.Sub(h.beat) > lease:
		return fmt.Errorf("its loop has not turned over for %s (longer than the lease, %s)", now.Sub(h.beat).Round(time.Millisecond), lease)
	case !h.failingSince.IsZero() && now.Sub(h.failingSince) > lease:
		return fmt.Errorf("the store has failed for %s (longer than the lease, %s): %w",
			now.Sub(h.failingSince).Round(time.Millisecond), lease, h.lastErr)
	}
	return nil
}
