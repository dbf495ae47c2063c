package job

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/conditions"
)

// BootTracker is what a job's wait-for-boot task needs from the boot-state
// side (package bootstate implements it). A job registers the boot attempt
// when the job starts, before it powers the server on, so a callback that
// arrives quickly is not lost and a late callback from an earlier boot
// (another attempt ID) cannot complete this one.
type BootTracker interface {
	// StartBoot opens (idempotently) the boot record for attempt attemptID of
	// the system, with the given deadline; zero means the tracker's default.
	StartBoot(ctx context.Context, systemUUID, attemptID string, timeout time.Duration) error

	// BootResult reports the attempt's state: done is false while the boot
	// is neither complete nor timed out; once done, result is
	// conditions.ResultSucceeded or conditions.ResultTimedOut (or Failed)
	// and message says why.
	BootResult(ctx context.Context, systemUUID, attemptID string) (done bool, result conditions.Result, message string, err error)
}
