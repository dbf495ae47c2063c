package syslock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrBusy is returned (wrapped in a [*BusyError]) by a [Locker]
// when another job holds the system.
var ErrBusy = errors.New("job: system held by another job")

// BusyError says which job holds a system, and which process acts for it.
type BusyError struct {
	System string
	Holder string
	// Owner is the process (a Runner's Owner, a StoreLocker's Owner) whose
	// live lease keeps the system; "" when unknown.
	Owner string
}

func (e *BusyError) Error() string {
	if e.Owner != "" {
		return fmt.Sprintf("system %s is held by job %q, acted for by %q", e.System, e.Holder, e.Owner)
	}
	return fmt.Sprintf("system %s is held by job %q", e.System, e.Holder)
}

// Unwrap returns ErrBusy.
func (e *BusyError) Unwrap() error { return ErrBusy }

// Locker keeps two jobs from acting on one system at the same time on
// the controller path (StepperConfig.Locks). A system is named by
// [bmc.Endpoint.SystemKey]; a holder is a job's Name. A lock is held by a
// job *and* by the process acting for it: two processes stepping the same
// job (two controller replicas without leader election) must not both pass.
// Implementations must be safe for concurrent use, across processes where
// the host runs several. [NewStoreLocker] implements it over any
// storage.Store; a Kubernetes Lease-backed implementation fits the same two
// methods (its holder identity names the job and the replica).
type Locker interface {
	// Lock takes system for holder on behalf of this process, or renews it
	// if they have it already, and returns how long they may act on the
	// system, counted from when Lock was called, by the caller's own clock:
	// the Stepper fences every BMC request of the step by it. It returns an
	// error wrapping ErrBusy when another holder, or another process
	// for the same holder, has the system. Idempotent.
	Lock(ctx context.Context, system, holder string) (time.Duration, error)

	// Unlock frees system if holder has it; otherwise it does nothing.
	// Idempotent.
	Unlock(ctx context.Context, system, holder string) error
}

// Taker is an optional [Locker] capability, found by type
// assertion: TakeLock is Lock that also reports whether the call took the
// system anew (it was free, released, or held by another process) rather
// than renewing this process's live lock for holder. When it took it, the
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
