// Package leaselock is a syslock.Locker on Kubernetes Leases
// (coordination.k8s.io/v1): one Lease per system, held by a job and the
// replica acting for it. See [Locker] and docs/kubernetes.md.
package leaselock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/syslock"
)

// Config configures [New]. Zero values mean defaults.
type Config struct {
	// Namespace holds the Leases (the controller's own namespace).
	// Required.
	Namespace string
	// LeaseDuration is how long a system's Lease lasts without renewal.
	// Every Step of the holding job renews it, at most once per third of it
	// (one Lease update per active job every LeaseDuration/3: every 5 s,
	// 0.2 writes/s per active job, at the default), so it bounds how long
	// a job that is no longer stepped (its controller stopped, its object
	// deleted without the finalizer) keeps its system, and how long a new
	// leader waits before it continues the jobs of a leader that was killed.
	// The holder stops acting a sixth of it before its own lease may end,
	// at the request (docs/jobs.md, "The fence"). Defaults to 15 seconds;
	// at least 6 s. Keep it longer than the longest wait between two Steps
	// of a job that holds the system.
	LeaseDuration time.Duration
	// Owner names this process (a replica) in the Leases' holderIdentity,
	// next to the job: two replicas stepping the same job (no leader
	// election) never both pass Lock, and a replica continues another's job
	// only after that one's Lease was seen unchanged for LeaseDuration. It
	// must be unique among live processes (two live replicas with the same
	// Owner both pass Lock for one job) and must not contain "@". A
	// process restarted with the same Owner (the same pod) takes its own
	// Leases back at once. Defaults to syslock.DefaultOwner(): $POD_NAME if
	// set (stable across restarts of a pod; the shipped Deployment sets it
	// from the downward API), else host-pid-random (unique, never
	// reclaimed); give each Locker its own Owner when one process runs
	// several.
	Owner string
	// Clock defaults to the wall clock.
	Clock job.Clock
	// Reader reads the Leases. Defaults to the client given to
	// New. Pass the manager's APIReader (Setup does): reading
	// Leases through the manager's cache would watch every Lease in the
	// cluster, the nodes' heartbeats included, and a lagging cache only
	// delays locks.
	Reader client.Reader
}

// Labels and annotations on the Leases a Locker writes.
const (
	LeaseManagedByLabel    = "app.kubernetes.io/managed-by"
	LeaseManagedBy         = "bmckit"
	LeaseSystemAnnotation  = "bmckit.io/system"
	leaseNamePrefix        = "bmckit-system-"
	leaseRenewEveryDivisor = 3
)

// DefaultLeaseDuration is Config.LeaseDuration's default.
const DefaultLeaseDuration = 15 * time.Second

// Locker is a syslock.Locker on Kubernetes Leases
// (coordination.k8s.io/v1): one Lease per system, in one namespace, named
// "bmckit-system-" and a hash of the system key (the key itself, which may
// not be a valid name, is in the annotation bmckit.io/system).
//
// Semantics:
//   - holder: spec.holderIdentity is the job's identity (controller.JobFor:
//     "namespace/name") and the replica acting for it (Owner), as
//     "namespace/name@owner" (split at the last "@"): two replicas stepping
//     one job never both pass, as with syslock.StoreLocker. Another replica
//     continues the job once the Lease expired (below); the same Owner (the
//     replica restarted) continues it at once. leaseTransitions counts
//     changes of holderIdentity; acquireTime is when it was taken.
//   - renew: Lock by the holder updates spec.renewTime, at most once per
//     third of LeaseDuration (a Step between renewals costs no write).
//   - validity: Lock returns LeaseDuration minus a sixth (slack for clock
//     rates and requests in flight) from the moment the last successful
//     write was sent, by this process's clock; the Stepper bounds the step's
//     BMC calls by it.
//   - expiry: another job takes the system over only after this process
//     saw the Lease unchanged (same resourceVersion) for a whole
//     leaseDurationSeconds by its own clock, never by comparing renewTime
//     with its clock (as client-go's leader election does), so clock skew
//     between replicas cannot cut a lease short. A released Lease (no
//     holder) is taken at once.
//   - writes are compare-and-swap on resourceVersion: of two jobs racing
//     for a system, the loser gets syslock.ErrBusy.
//   - busy: a *syslock.BusyError names the holding job and replica, says
//     whether it is the asking job (SameJob), and when its Lease runs out
//     as this process sees it (first sight of its resourceVersion plus
//     leaseDurationSeconds).
//   - Unlock for the holding job, by any replica, clears holderIdentity
//     (the Lease object stays, as client-go's leader election leaves it):
//     whoever ends a job releases its system (see syslock.Locker). For any
//     other job it does nothing.
//
// The controller needs RBAC to get, create and update leases in Namespace.
type Locker struct {
	c     client.Client
	r     client.Reader
	ns    string
	lease time.Duration
	owner string
	clock job.Clock

	mu       sync.Mutex
	seen     map[string]observation // system -> another holder's Lease as first seen
	renewals map[string]renewal     // system -> our last successful write
}

type observation struct {
	resourceVersion string
	at              time.Time
}

type renewal struct {
	holder          string
	sent            time.Time
	resourceVersion string // of the Lease as this write left it
}

var (
	_ syslock.Locker = (*Locker)(nil)
	_ syslock.Taker  = (*Locker)(nil)
)

// New returns a Locker writing Leases through c.
func New(c client.Client, cfg Config) (*Locker, error) {
	if cfg.Namespace == "" {
		return nil, fmt.Errorf("leaselock: Config.Namespace is required")
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.LeaseDuration < 6*time.Second {
		return nil, fmt.Errorf("leaselock: Config.LeaseDuration %s: at least 6s (the Lease counts whole seconds)", cfg.LeaseDuration)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Reader == nil {
		cfg.Reader = c
	}
	if cfg.Owner == "" {
		cfg.Owner = syslock.DefaultOwner()
	}
	if strings.Contains(cfg.Owner, "@") {
		return nil, fmt.Errorf("leaselock: Config.Owner %q: must not contain \"@\" (it separates the job from the owner in holderIdentity)", cfg.Owner)
	}
	return &Locker{c: c, r: cfg.Reader, ns: cfg.Namespace, lease: cfg.LeaseDuration, owner: cfg.Owner, clock: cfg.Clock,
		seen: map[string]observation{}, renewals: map[string]renewal{}}, nil
}

// LeaseName is the name of system's Lease.
func LeaseName(system string) string {
	sum := sha256.Sum256([]byte(system))
	return leaseNamePrefix + hex.EncodeToString(sum[:16])
}

func (l *Locker) validity() time.Duration { return l.lease - l.lease/6 }

// identity is the holderIdentity of holder's Lease taken by this replica.
func (l *Locker) identity(holder string) string { return holder + "@" + l.owner }

// splitIdentity splits a holderIdentity into the job and the replica (the
// Owner, which holds no "@"); an identity without "@" is all job.
func splitIdentity(id string) (holder, owner string) {
	if i := strings.LastIndexByte(id, '@'); i >= 0 {
		return id[:i], id[i+1:]
	}
	return id, ""
}

// Lock implements syslock.Locker.
func (l *Locker) Lock(ctx context.Context, system, holder string) (time.Duration, error) {
	d, _, err := l.TakeLock(ctx, system, holder)
	return d, err
}

// TakeLock implements syslock.Taker: Lock, reporting whether the Lease was
// taken anew (created, released, taken over, or this Owner's from a
// previous process) rather than renewed by this process for holder, so the
// Stepper confirms its copy of the job with a write before it acts.
func (l *Locker) TakeLock(ctx context.Context, system, holder string) (time.Duration, bool, error) {
	now := l.clock.Now()
	l.mu.Lock()
	last, ok := l.renewals[system]
	l.mu.Unlock()
	if ok && last.holder == holder && now.Sub(last.sent) < l.lease/leaseRenewEveryDivisor {
		return last.sent.Add(l.validity()).Sub(now), false, nil
	}
	id := l.identity(holder)
	var lease coordinationv1.Lease
	err := l.r.Get(ctx, types.NamespacedName{Namespace: l.ns, Name: LeaseName(system)}, &lease)
	if apierrors.IsNotFound(err) {
		lease = l.newLease(system)
		l.take(&lease, id, now)
		sent := l.clock.Now()
		if err := l.c.Create(ctx, &lease); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return 0, false, l.raced(ctx, system, holder)
			}
			return 0, false, fmt.Errorf("creating lease %s/%s for system %s: %w", l.ns, lease.Name, system, err)
		}
		return l.held(system, holder, sent, lease.ResourceVersion), true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading lease %s/%s of system %s: %w", l.ns, LeaseName(system), system, err)
	}
	cur := ""
	if lease.Spec.HolderIdentity != nil {
		cur = *lease.Spec.HolderIdentity
	}
	// A renewal of this process's own live Lease: the one it wrote last.
	// The same identity at another resourceVersion is this Owner's previous
	// process (a restart): taken anew, at once.
	renewal := cur == id && ok && last.holder == holder && last.resourceVersion == lease.ResourceVersion
	switch {
	case renewal:
		lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
		lease.Spec.LeaseDurationSeconds = ptr(int32(l.lease / time.Second))
	case cur == "" || cur == id:
		l.take(&lease, id, now)
	default:
		expired, until := l.expired(system, &lease, now)
		if !expired {
			return 0, false, busyError(system, cur, holder, until)
		}
		l.take(&lease, id, now)
	}
	sent := l.clock.Now()
	if err := l.c.Update(ctx, &lease); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return 0, false, l.raced(ctx, system, holder)
		}
		return 0, false, fmt.Errorf("updating lease %s/%s of system %s: %w", l.ns, lease.Name, system, err)
	}
	return l.held(system, holder, sent, lease.ResourceVersion), !renewal, nil
}

// busyError says that identity cur holds system, to holder, until until.
func busyError(system, cur, holder string, until time.Time) *syslock.BusyError {
	job, owner := splitIdentity(cur)
	return &syslock.BusyError{System: system, Holder: job, Owner: owner, SameJob: job == holder, Until: until}
}

// raced is the error of a write that lost its compare-and-swap: it reads
// the Lease again to name the winner (and starts counting its lease).
func (l *Locker) raced(ctx context.Context, system, holder string) error {
	var lease coordinationv1.Lease
	if err := l.r.Get(ctx, types.NamespacedName{Namespace: l.ns, Name: LeaseName(system)}, &lease); err != nil ||
		lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return &syslock.BusyError{System: system}
	}
	_, until := l.expired(system, &lease, l.clock.Now())
	return busyError(system, *lease.Spec.HolderIdentity, holder, until)
}

func (l *Locker) newLease(system string) coordinationv1.Lease {
	return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace:   l.ns,
		Name:        LeaseName(system),
		Labels:      map[string]string{LeaseManagedByLabel: LeaseManagedBy},
		Annotations: map[string]string{LeaseSystemAnnotation: system},
	}}
}

// take makes holder the Lease's holder, from now.
func (l *Locker) take(lease *coordinationv1.Lease, holder string, now time.Time) {
	transitions := int32(0)
	if lease.Spec.LeaseTransitions != nil {
		transitions = *lease.Spec.LeaseTransitions
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && *lease.Spec.HolderIdentity != holder {
		transitions++
	}
	lease.Spec.HolderIdentity = ptr(holder)
	lease.Spec.LeaseDurationSeconds = ptr(int32(l.lease / time.Second))
	lease.Spec.AcquireTime = &metav1.MicroTime{Time: now}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
	lease.Spec.LeaseTransitions = ptr(transitions)
}

// held records a successful write sent at sent, which left the Lease at
// resourceVersion, and returns its validity from now.
func (l *Locker) held(system, holder string, sent time.Time, resourceVersion string) time.Duration {
	l.mu.Lock()
	l.renewals[system] = renewal{holder: holder, sent: sent, resourceVersion: resourceVersion}
	delete(l.seen, system)
	l.mu.Unlock()
	return sent.Add(l.validity()).Sub(l.clock.Now())
}

// expired reports whether this process has seen another holder's Lease
// unchanged for its whole duration, by its own clock, and when it runs out
// by that count. The first sight of a resourceVersion starts the count.
func (l *Locker) expired(system string, lease *coordinationv1.Lease, now time.Time) (bool, time.Time) {
	d := l.lease
	if s := lease.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		d = time.Duration(*s) * time.Second
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.renewals, system)
	o, ok := l.seen[system]
	if !ok || o.resourceVersion != lease.ResourceVersion {
		l.seen[system] = observation{resourceVersion: lease.ResourceVersion, at: now}
		return false, now.Add(d)
	}
	return now.Sub(o.at) >= d, o.at.Add(d)
}

// Unlock implements syslock.Locker: it clears holderIdentity when the
// Lease's job is holder, whichever replica holds it (a compare-and-swap on
// resourceVersion, read again after a conflict), and leaves another job's
// Lease alone.
func (l *Locker) Unlock(ctx context.Context, system, holder string) error {
	l.mu.Lock()
	if r, ok := l.renewals[system]; ok && r.holder == holder {
		delete(l.renewals, system)
	}
	l.mu.Unlock()
	for attempt := 1; ; attempt++ {
		var lease coordinationv1.Lease
		err := l.r.Get(ctx, types.NamespacedName{Namespace: l.ns, Name: LeaseName(system)}, &lease)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading lease %s/%s of system %s to release it for job %q: %w", l.ns, LeaseName(system), system, holder, err)
		}
		if lease.Spec.HolderIdentity == nil {
			return nil // released already
		}
		if job, _ := splitIdentity(*lease.Spec.HolderIdentity); job != holder {
			return nil // another job's
		}
		lease.Spec.HolderIdentity = nil
		lease.Spec.RenewTime = &metav1.MicroTime{Time: l.clock.Now()}
		err = l.c.Update(ctx, &lease)
		if apierrors.IsConflict(err) && attempt < 5 {
			continue // renewed or taken meanwhile: look again
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing lease %s/%s of system %s for job %q: %w", l.ns, lease.Name, system, holder, err)
		}
		return nil
	}
}

func ptr[T any](v T) *T { return &v }
