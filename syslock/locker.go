package syslock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBusy is returned (wrapped in a [*BusyError]) by a [Locker]
// when another job holds the system.
var ErrBusy = errors.New("job: system held by another job")

// BusyError says which job holds a system, which process acts for it, and
// until when this process expects to wait. A host shows it as "waiting for
// <Holder> (replica <Owner>), lease runs out at <Until>". It carries names
// only, never a credential.
type BusyError struct {
	System string
	// Holder is the job that holds the system (as the locker names jobs:
	// a Job's Name, "namespace/name" on the Kubernetes kit's path); "" when
	// the lock changed while it was being taken and the new holder could
	// not be read (or the lock was released meanwhile): try again.
	Holder string
	// Owner is the process (a Runner's Owner, a StoreLocker's Owner, a
	// Lease locker's replica) whose live lease keeps the system; "" when
	// unknown or when the lock was released with its job unfinished.
	Owner string
	// SameJob is true when Holder is the job that asked for the lock,
	// held by another process (Owner): two replicas stepping one job, the
	// other one acting. False for another job, including a job of the same
	// name in another namespace (another KeyPrefix). Callers may also
	// compare Holder with their job's name, but only SameJob knows about
	// namespaces.
	SameJob bool
	// Until is when the lock runs out as this process sees it, by this
	// process's clock: when it first saw the lock's current revision (a
	// Lease's resourceVersion) plus the lease's length. The lock becomes
	// takeable then unless its holder renews it first (a renewal restarts
	// the count). Zero when unknown. Never the holder's own timestamp:
	// another replica's clock is not compared with ours.
	Until time.Time
}

func (e *BusyError) Error() string {
	var b strings.Builder
	switch {
	case e.Holder == "":
		fmt.Fprintf(&b, "system %s changed while it was being locked (another writer won the compare-and-swap)", e.System)
	case e.SameJob && e.Owner != "":
		fmt.Fprintf(&b, "system %s is held for job %q by another process, %q", e.System, e.Holder, e.Owner)
	case e.Owner != "":
		fmt.Fprintf(&b, "system %s is held by job %q (process %q)", e.System, e.Holder, e.Owner)
	default:
		fmt.Fprintf(&b, "system %s is held by job %q", e.System, e.Holder)
	}
	if !e.Until.IsZero() {
		fmt.Fprintf(&b, "; its lease runs out at %s unless renewed", e.Until.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Unwrap returns ErrBusy.
func (e *BusyError) Unwrap() error { return ErrBusy }

// Locker keeps two jobs from acting on one system at the same time on
// the controller path (StepperConfig.Locks). A system is named by
// [bmc.Endpoint.SystemKey]; a holder is a job's Name. A lock is held by a
// job *and* by the process acting for it (its owner): two processes
// stepping the same live job (two controller replicas without leader
// election) must not both pass Lock. But it is released by job, by any
// process (see Unlock). Implementations must be safe for concurrent use,
// across processes where the host runs several. [NewStoreLocker]
// implements it over any storage.Store; a Kubernetes Lease-backed
// implementation fits the same two methods (its holder identity names the
// job and the replica).
type Locker interface {
	// Lock takes system for holder on behalf of this process, or renews it
	// if they have it already, and returns how long they may act on the
	// system, counted from when Lock was called, by the caller's own clock:
	// the Stepper fences every BMC request of the step by it. It returns an
	// error wrapping ErrBusy (a [*BusyError] naming the holder, its process
	// and when its lease runs out) when another holder, or another live
	// process for the same holder, has the system. A process with the same
	// owner name as the lock's, for the same holder, takes it at once: it
	// is the same replica restarted, its previous process gone (an owner
	// must be unique among live processes). Idempotent.
	Lock(ctx context.Context, system, holder string) (time.Duration, error)

	// Unlock frees system if its lock's holder is holder, whichever
	// process holds it (a compare-and-swap on the holder and the lock's
	// revision, never on the owner); a lock held by another job (or a job
	// of another namespace) is left alone. Idempotent.
	//
	// Releasing by job lets whoever ends a job free its system: the replica
	// that completed a job, or handled its object's deletion, is often not
	// the one whose lease it was (after an API-server outage, 4 to 15 of 20
	// systems stayed locked by completed jobs when only the lease's owner
	// could release). It is safe because a job is unlocked only once it
	// completed or its object was deleted, and every state-changing request
	// of a step is preceded, in that step, by a compare-and-swap of the job
	// itself: a process that still believes it holds the lock (a stale
	// copy, a lease it renewed a moment ago) fails that write for a
	// completed or deleted job and sends nothing. Call it only for such a
	// job, never to hand a live job to another process.
	Unlock(ctx context.Context, system, holder string) error
}

// Taker is an optional [Locker] capability, found by type
// assertion: TakeLock is Lock that also reports whether the call took the
// system anew (it was free, released, or held by another process, the
// previous process of a restarted owner included) rather than renewing
// this process's live lock for holder. When it took it, the
// Stepper stores the job (persist) before its first BMC call of a job that
// has started: a controller replica stepping a stale copy of a job (one that
// another replica completed and unlocked meanwhile) fails at that write, a
// compare-and-swap where the host's persist is one (an optimistic lock),
// instead of acting on the BMC for a finished job. Without it, a taken lock
// cannot be told from a renewal, and a stale copy whose next action needs no
// write first (a poll, a retry) reaches the BMC. [StoreLocker] implements it;
// a wrapper around a locker must pass it through.
type Taker interface {
	TakeLock(ctx context.Context, system, holder string) (validFor time.Duration, taken bool, err error)
}

// NoLocking is the StepperConfig.Locks of a host that keeps two jobs, and
// two processes, off one system by other means, and says so: Step then
// takes no lock, and fences its BMC requests only by a [bmc.Fence] the host
// puts in the ctx it passes (bmc.WithFence). The Runner uses it for its own
// Stepper, whose steps run under the Runner's locks and fences. A Stepper
// with Locks left nil is refused by NewStepper, so that the choice is
// visible in the host's code.
var NoLocking Locker = noLocking{}

type noLocking struct{}

// Lock implements Locker: always granted, for as long as the caller
// likes (the Stepper does not call it).
func (noLocking) Lock(context.Context, string, string) (time.Duration, error) {
	return time.Duration(1<<63 - 1), nil
}

// Unlock implements Locker: nothing to do.
func (noLocking) Unlock(context.Context, string, string) error { return nil }

func IsNoLocking(l Locker) bool {
	_, ok := l.(noLocking)
	return ok
}
