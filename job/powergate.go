package job

import (
	"context"
	"time"
)

// PowerGate limits power-on inrush: the Stepper asks it before it sends a
// power on, cycle or reset, and holds the action back while the gate says to
// wait (package stagger implements it over a storage.Store, per group of
// systems such as a rack or a PDU, shared by replicas).
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
