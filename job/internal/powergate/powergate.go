// Package powergate asks a power gate (package job's PowerGate and
// HeldPowerGate, declared here again by their methods, so this package
// needs no import of job) for the slot of a power request.
package powergate

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Gate is job.PowerGate.
type Gate interface {
	Admit(ctx context.Context, system, job string, taskIndex int) (wait time.Duration, err error)
}

// Held is job.HeldPowerGate's own method.
type Held interface {
	AdmitHeld(ctx context.Context, system, job string, taskIndex int) (send context.Context, release func(context.Context), wait time.Duration, err error)
}

// Admit asks gate (nil admits everything) for the slot of the power
// request of task taskIndex of job on system: through AdmitHeld when gate
// has it, otherwise Admit. It returns the context to send the request
// under and the release to call once the request's call returned; a
// *Gated while the gate holds the action back, and a transient error when
// the gate cannot be asked. The Stepper asks it for every action that can
// power a server on: a power task's on, cycle or reset (kinds that declare
// it, powerChanger), and a power cycle it sends as a follow-up.
func Admit(ctx context.Context, gate Gate, system, job string, taskIndex int) (send context.Context, release func(context.Context), err error) {
	none := func(context.Context) {}
	if gate == nil {
		return ctx, none, nil
	}
	var wait time.Duration
	if hg, ok := gate.(Held); ok {
		send, release, wait, err = hg.AdmitHeld(ctx, system, job, taskIndex)
	} else {
		send, release = ctx, none
		wait, err = gate.Admit(ctx, system, job, taskIndex)
	}
	if err != nil {
		return nil, nil, bmc.Transient(fmt.Errorf("asking the power gate: %w", err))
	}
	if wait > 0 {
		return nil, nil, &Gated{Wait: wait}
	}
	return send, release, nil
}

// Gated is returned when the gate holds a power action back: nothing was
// sent; ask again after Wait.
type Gated struct{ Wait time.Duration }

func (g *Gated) Error() string { return fmt.Sprintf("held back by the power gate for %s", g.Wait) }
