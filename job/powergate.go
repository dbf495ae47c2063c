package job

import (
	"context"
	"time"
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

// The Stepper asks the gate through job/internal/powergate (Admit), which
// declares these two interfaces by their methods.
