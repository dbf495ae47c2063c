package job

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/syslock"
)

// What a step takes and gives: how the job is stored (PersistFunc) and when
// to step again (StepResult). The step itself is [Stepper.Step].

// PersistFunc stores the job's current state. The Stepper calls it with the
// intent before it touches the BMC and again with each result, so the same
// state machine is crash-safe whether persist is a compare-and-swap on a
// Store (the Runner) or a status patch of a host's own object (a controller).
// If persist fails, Step stops and returns the error without touching the BMC.
//
// j is the Stepper's working copy: Step goes on changing it, in place, after
// persist returned. A host that patches its own object from a copy taken
// inside persist uses [Stepper.StepPatch] instead, which hands it the status
// before and after each change as copies of their own.
type PersistFunc func(ctx context.Context, j *Job) error

// StepResult says when to call Step again.
type StepResult struct {
	// Done is true once the job completed; no further steps are needed.
	Done bool
	// RequeueAfter is how long to wait before the next Step (0: at once).
	RequeueAfter time.Duration
	// Waiting is true when another job holds the job's system (see
	// StepperConfig.Locks): the step touched neither the BMC nor the job.
	Waiting bool
	// Busy, when Waiting, is the locker's answer: which job holds the
	// system (it may be this job, held by another process: Busy.Holder is
	// then the job's own name), which process acts for it and, where the
	// locker knows, when its lock runs out. A host shows it (the Kubernetes
	// kit's Waiting condition and event).
	Busy *syslock.BusyError
}
