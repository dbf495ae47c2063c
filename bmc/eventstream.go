package bmc

import "context"

// EventStreamer is implemented by drivers that can read the BMC's events
// as a stream the client opens (Redfish: the EventService's
// ServerSentEventUri), for BMCs that offer it instead of, or besides,
// pushes to a subscription ([EventSubscriber]). Package bmcevents stores
// what it reads under the same keys as pushed events (its Streamer), so a
// host sees one stream whatever the BMC offers; see docs/health-events.md.
//
// Unlike [PowerWatcher], which shares one stream among a session's
// systems and passes on hints, a StreamEvents call owns its stream and
// passes on every event whole.
type EventStreamer interface {
	// StreamEvents opens the BMC's event stream and calls fn with each
	// event in the order the BMC sends them, one call at a time, from the
	// caller's goroutine: the next event is read only after fn returned,
	// so fn may store an event before the next one is taken. data is one
	// Redfish Event document (the JSON a subscription's destination
	// receives: {"Events": [...]}), at most a megabyte, not yet validated:
	// it is outside input. fn must not keep data after it returns.
	//
	// It blocks until ctx ends (returning ctx.Err()), fn returns an error
	// (returned as is), the driver is closed, or the BMC ends the stream
	// (an error marked transient: open it again, events sent meanwhile
	// are lost to this stream). A BMC without a stream fails with an error
	// wrapping [ErrNotSupported] before any event, without blocking.
	// Safe for concurrent use; each call opens a stream of its own.
	StreamEvents(ctx context.Context, fn func(data []byte) error) error
}
