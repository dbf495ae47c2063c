package job

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// This file holds what a host (a controller-runtime manager, a plain HTTP
// server) needs to run a Runner next to other components: whether it needs
// leader election, and a health check.

// NeedLeaderElection reports false: every replica of a controller can run its
// Runner at once. The Store's system locks (one job per system, leases with
// fencing, see "Scheduling" in the package doc) already keep replicas from
// acting on one system together, and a replica that stands by while another
// leads would only add failover delay. It implements controller-runtime's
// manager.LeaderElectionRunnable without importing it, so a manager started
// with leader election still starts the Runner on every replica.
//
// The Store must be shared by the replicas (storage/sqlstore, not a bbolt
// file per pod) for this to spread the work; with a per-pod store each
// replica runs only its own jobs.
func (r *Runner) NeedLeaderElection() bool { return false }

// ErrUnhealthy is wrapped by the errors of [Runner.Healthz].
var ErrUnhealthy = errors.New("job runner unhealthy")

// Healthz reports whether the Runner is working. It returns nil while
// [Runner.Start]'s loop is running and turning over, and an error wrapping
// [ErrUnhealthy] when:
//   - Start has not been called, or has returned;
//   - the loop has not turned over for longer than Config.LeaseDuration (it
//     turns over at least every Config.ScanInterval, so it is stuck);
//   - the Store has failed without a success in between for longer than
//     Config.LeaseDuration: the Runner's leases have lapsed, so it does no
//     work, and a replica with a working store takes its systems over.
//
// A store outage shorter than a lease is healthy: the Runner pauses and
// resumes on its own, and restarting it would not help. The request is not
// read; the signature is controller-runtime's healthz.Checker
// (mgr.AddHealthzCheck("bmckit-runner", runner.Healthz)), and errors name no
// secret.
func (r *Runner) Healthz(_ *http.Request) error {
	return r.health.check(r.cfg.Clock.Now(), r.cfg.LeaseDuration)
}

// runnerHealth is what Healthz reads. The loop writes it; Healthz reads it
// from the HTTP server's goroutines.
type runnerHealth struct {
	mu           sync.Mutex
	running      bool
	stopped      bool
	beat         time.Time // the loop's last turn
	failingSince time.Time // first store failure since the last success; zero: none
	lastErr      error
}

func (h *runnerHealth) start(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running, h.beat = true, now
}

func (h *runnerHealth) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running, h.stopped = false, true
}

// turn records one turn of the loop.
func (h *runnerHealth) turn(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.beat = now
}

// store records the outcome of a store call the loop made (a scan, a lease
// renewal).
func (h *runnerHealth) store(now time.Time, err error) {
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

func (h *runnerHealth) check(now time.Time, lease time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.running && h.stopped:
		return fmt.Errorf("%w: stopped (Start returned)", ErrUnhealthy)
	case !h.running:
		return fmt.Errorf("%w: not started (call Start, or add it to the manager)", ErrUnhealthy)
	case now.Sub(h.beat) > lease:
		return fmt.Errorf("%w: its loop has not turned over for %s (longer than the lease, %s)", ErrUnhealthy, now.Sub(h.beat).Round(time.Millisecond), lease)
	case !h.failingSince.IsZero() && now.Sub(h.failingSince) > lease:
		return fmt.Errorf("%w: the store has failed for %s (longer than the lease, %s): %w",
			ErrUnhealthy, now.Sub(h.failingSince).Round(time.Millisecond), lease, h.lastErr)
	}
	return nil
}
