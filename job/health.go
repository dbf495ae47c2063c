package job

import (
	"errors"
	"fmt"
	"net/http"
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
	if err := r.health.Check(r.cfg.Clock.Now(), r.cfg.LeaseDuration); err != nil {
		return fmt.Errorf("%w: %w", ErrUnhealthy, err) // job/internal/health judges
	}
	return nil
}
