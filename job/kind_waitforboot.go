package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// waitForBootKind completes when the host's BootTracker reports the task's
// boot attempt done. It touches no BMC. Its deadline belongs to the tracker
// (whose record says which signals did arrive); the task's own timer is a
// backstop that fires a little later.
type waitForBootKind struct{ a *task.WaitForBootAction }

func (k waitForBootKind) defaultTimeout(*StepperConfig) time.Duration {
	return 30 * time.Minute
}
func (k waitForBootKind) grace(cfg *StepperConfig) time.Duration {
	return 2*cfg.BootPollInterval + 5*time.Second
}
func (k waitForBootKind) usesBMC() bool     { return false }
func (k waitForBootKind) recheckable() bool { return true }

func (k waitForBootKind) systemUUID(j *Job) string {
	if k.a.SystemUUID != "" {
		return k.a.SystemUUID
	}
	return j.Spec.SystemUUID
}

// send does nothing: the attempt was opened before the tasks that power the
// server on (see openNextBoot).
func (k waitForBootKind) send(context.Context, *stepRun, bmc.Driver) error { return nil }

func (k waitForBootKind) check(ctx context.Context, r *stepRun, _ bmc.Driver, _ bool) (bool, string, error) {
	boot := r.s.cfg.Boot
	if boot == nil {
		return false, "", &taskFailure{conditions.ReasonNotSupported, "no BootTracker configured"}
	}
	i := r.j.Status.CurrentTask
	done, result, msg, err := boot.BootResult(ctx, k.systemUUID(r.j), BootAttemptID(r.j, i))
	if err != nil {
		return false, "", bmc.Transient(fmt.Errorf("reading boot state: %w", err))
	}
	if !done {
		return false, "waiting for boot signals", nil
	}
	if result == conditions.ResultSucceeded {
		return true, "booted: " + msg, nil
	}
	reason := string(result)
	if reason == "" {
		reason = conditions.ReasonFailed
	}
	return false, "", &taskFailure{reason, "boot " + string(result) + ": " + msg}
}

func (k waitForBootKind) notYet(_ context.Context, r *stepRun, _ int, _ string) (StepResult, error) {
	return StepResult{RequeueAfter: r.s.cfg.BootPollInterval}, nil
}
