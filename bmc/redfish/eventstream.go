package redfish

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.EventStreamer = (*Driver)(nil)

// StreamEvents implements [bmc.EventStreamer] on the EventService's
// ServerSentEventUri: the same discovery as WatchPower (one GET of the
// EventService per session; a BMC without a stream is remembered, by the
// session and for an hour by the Dialer, and answers bmc.ErrNotSupported
// without a request), then a GET of the stream on a connection of its own,
// outside Options.MaxConnections, held until ctx ends, the session closes
// or the BMC ends it. Each SSE event's data (a Redfish Event) goes to fn
// as it is; the decoder (readSSE) bounds a line to 64 KiB and an event to
// 1 MiB. Options.NoEventStream (events=off) turns it off.
func (d *Driver) StreamEvents(ctx context.Context, fn func(data []byte) error) error {
	if d.closed.Load() {
		return d.opErr("stream events", bmc.Permanent(errors.New("driver is closed")))
	}
	if d.s.opts.NoEventStream {
		return d.opErr("stream events", fmt.Errorf("the event stream is turned off (Options.NoEventStream): %w", bmc.ErrNotSupported))
	}
	ctx = withCounts(ctx, d.counts)
	h := &d.s.events
	h.mu.Lock()
	if h.unsupported == nil {
		h.unsupported = h.memo.get(d.s.ep.Key())
	}
	unsupported, closed := h.unsupported, h.closed
	h.mu.Unlock()
	switch {
	case closed:
		return d.opErr("stream events", errSessionClosed)
	case unsupported != nil:
		return d.opErr("stream events", unsupported)
	}
	uri, err := d.sseURI(ctx)
	if err != nil {
		if errors.Is(err, bmc.ErrNotSupported) {
			h.mu.Lock()
			h.unsupported = err
			h.mu.Unlock()
			h.memo.set(d.s.ep.Key(), err)
		}
		return d.opErr("stream events", err)
	}
	resp, cancel, err := d.openSSE(ctx, ctx, uri)
	if err != nil {
		return d.opErr("stream events", err)
	}
	defer cancel()
	defer resp.Body.Close()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return d.opErr("stream events", errSessionClosed)
	}
	if h.streams == nil {
		h.streams = map[*context.CancelFunc]struct{}{}
	}
	h.streams[&cancel] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, &cancel)
		h.mu.Unlock()
	}()
	var fnErr error
	err = readSSE(resp.Body, func(data []byte) error {
		if err := fn(data); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	switch {
	case fnErr != nil:
		return fnErr
	case ctx.Err() != nil:
		return ctx.Err()
	}
	h.mu.Lock()
	closed = h.closed
	h.mu.Unlock()
	if closed {
		return d.opErr("stream events", errSessionClosed)
	}
	if err == nil {
		err = errors.New("the BMC ended the event stream")
	}
	return d.opErr("stream events", bmc.Transient(fmt.Errorf("event stream %s: %w", uri, err)))
}
