package bmc

import "context"

// PowerWatcher is implemented by drivers that can be told by the BMC when the
// power state of their system changes (Redfish: the EventService's
// Server-Sent Events stream). It is optional: callers that find it use it to
// poll less, and confirm every change with PowerState, which stays the only
// source of truth; they keep polling where it is missing or fails.
//
// Drivers that share one session among several systems (see [SystemOpener])
// should share one stream among them too: one connection per endpoint, not
// one per waiting caller.
type PowerWatcher interface {
	// WatchPower registers notify, to be called each time the BMC reports
	// that this system's power state may have changed. The event is a hint,
	// not a state: read PowerState to learn what changed. It returns once
	// the stream is open (or already was, for another system of the same
	// session), and a stop function that unregisters notify (idempotent,
	// safe from any goroutine, also from inside notify).
	//
	// notify is called from the driver's own goroutine and must not block.
	// When the stream ends (the BMC closed it, the connection broke, the
	// driver was closed), notify is called one last time with a PowerEvent
	// whose Err is set, and never again: events may be missed from then on,
	// so the caller polls (and may call WatchPower again later).
	//
	// An error wrapping [ErrNotSupported] means the BMC offers no such
	// stream; callers should not ask again on this connection. Other errors
	// (the stream could not be opened) may be transient.
	WatchPower(ctx context.Context, notify func(PowerEvent)) (stop func(), err error)
}

// PowerEvent is one notification of a [PowerWatcher].
type PowerEvent struct {
	// Err is nil for a change notification. It is set on the last event of
	// a watch: the stream ended, and why.
	Err error
}
