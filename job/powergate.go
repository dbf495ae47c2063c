package job

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// PowerGate limits power-on inrush: the Stepper asks it before it sends a
// power on, cycle or reset, and holds the action back while the gate says to
// wait (package stagger implements it over a storage.Store, per group of
// systems such as a rack or a PDU, shared by replicas). A gate that also
// implements HeldPowerGate is asked through AdmitHeld instead.
type PowerGate interface {
	// Admit reserves a slot for the power action of task taskIndex of job on
	// system (a bmc.Endpoint.SystemKey), or returns how long to wait before
	// asking again (a positive wait; no slot taken). Asking again for the
	// same system, job and task after a slot was granted (a resumed or
	// retried step) returns 0 without taking a second slot (an
	// implementation may move that slot to now, as package stagger does, so a
	// re-sent action is counted when it is sent). It must be safe for
	// concurrent use, and across processes where the host runs several.
	//
	// Time spent held back counts toward the task's timeout: give power
	// tasks a Timeout that covers the wait a group's queue can cause.
	Admit(ctx context.Context, system, job string, taskIndex int) (wait time.Duration, err error)
}

// HeldPowerGate is a PowerGate whose slots count from the power request
// instead of the grant (package stagger's Limiter is one): the Stepper uses
// AdmitHeld instead of Admit when its PowerGate has it.
type HeldPowerGate interface {
	PowerGate
	// AdmitHeld is Admit for a power request about to be sent. When it
	// grants a slot (wait 0), the request is made under send (a ctx derived
	// from ctx, which drivers' bmc.Admit consults before each request), and
	// release is called once that call returned, whatever it returned.
	// Without a slot, send is ctx and release does nothing.
	AdmitHeld(ctx context.Context, system, job string, taskIndex int) (send context.Context, release func(context.Context), wait time.Duration, err error)
}

// admitPower asks gate (nil admits everything) for the slot of the power
// request of task taskIndex of job on system: through AdmitHeld when gate
// has it, otherwise Admit. It returns the context to send the request
// under and the release to call once the request's call returned; a
// *gated while the gate holds the action back, and a transient error when
// the gate cannot be asked. The Stepper asks it for every action that can
// power a server on: a power task's on, cycle or reset (kinds that declare
// it, powerChanger), and a power cycle it sends as a follow-up.
func admitPower(ctx context.Context, gate PowerGate, system, job string, taskIndex int) (send context.Context, release func(context.Context), err error) {
	none := func(context.Context) {}
	if gate == nil {
		return ctx, none, nil
	}
	var wait time.Duration
	if hg, ok := gate.(HeldPowerGate); ok {
		send, release, wait, err = hg.AdmitHeld(ctx, system, job, taskIndex)
	} else {
		send, release = ctx, none
		wait, err = gate.Admit(ctx, system, job, taskIndex)
	}
	if err != nil {
		return nil, nil, bmc.Transient(fmt.Errorf("asking the power gate: %w", err))
	}
	if wait > 0 {
		return nil, nil, &gated{wait: wait}
	}
	return send, release, nil
}

// gated is returned when the PowerGate holds a power action back.
type gated struct{ wait time.Duration }

func (g *gated) Error() string { return fmt.Sprintf("held back by the power gate for %s", g.wait) }
