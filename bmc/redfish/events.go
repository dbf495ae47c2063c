package redfish

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Power events from the EventService's Server-Sent Events stream.
//
// [Driver.WatchPower] implements [bmc.PowerWatcher]. The first watch on a
// session finds the stream (the service root's EventService link, one GET of
// the EventService for its ServerSentEventUri) and opens it: one GET that
// stays open on a connection of its own, outside Options.MaxConnections (a
// stream must never keep a request of the session waiting for a connection).
// Every system sharing the session (see [Driver.OpenSystem]) shares that one
// stream; each event record names the resource it concerns
// (OriginOfCondition), and the watches of the system it names, or of a system
// whose resource contains it, are notified. The stream stays open until the
// session closes or the BMC ends it; when it ends, every watch gets a last
// event with the error, and the next WatchPower opens a new stream. A BMC
// without the EventService or without ServerSentEventUri is remembered for
// the session and, for an hour, by the Dialer for the endpoint, so later
// sessions (a job each) skip the EventService GET: WatchPower then answers
// bmc.ErrNotSupported without a request. The opening GETs count in Stats like any request.

var _ bmc.PowerWatcher = (*Driver)(nil)

// eventHub is a session's event stream and the watches on it.
type eventHub struct {
	mu          sync.Mutex
	unsupported error  // set once the BMC proved to have no SSE stream
	sseURI      string // found once per session
	open        bool   // the stream is open (or opening: see opening)
	opening     chan struct{}
	openErr     error
	cancel      context.CancelFunc
	closed      bool
	watches     map[*powerWatch]struct{}
	memo        *sseMemo // the Dialer's; nil: none
	// streams cancels the streams of StreamEvents calls (eventstream.go)
	// when the session closes.
	streams map[*context.CancelFunc]struct{}
}

// sseMemoTTL is how long a Dialer remembers that an endpoint has no SSE
// stream (a firmware update may add one).
const sseMemoTTL = time.Hour

// sseMemo is a Dialer's memory of the endpoints (bmc.Endpoint.Key) found
// without an SSE stream, so that the next session to one (a job each) does
// not GET its EventService again. Safe for concurrent use; a nil memo
// remembers nothing.
type sseMemo struct {
	mu sync.Mutex
	m  map[string]sseMiss
}

type sseMiss struct {
	err error
	at  time.Time
}

func (m *sseMemo) get(key string) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	miss, ok := m.m[key]
	if !ok || time.Since(miss.at) > sseMemoTTL {
		delete(m.m, key)
		return nil
	}
	return miss.err
}

func (m *sseMemo) set(key string, err error) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]sseMiss{}
	}
	m.m[key] = sseMiss{err: err, at: time.Now()}
}

type powerWatch struct {
	system string // the system's URI, without trailing slash
	notify func(bmc.PowerEvent)
}

// WatchPower implements [bmc.PowerWatcher]: notify is called when the BMC's
// event stream reports a change of this driver's system (an event record
// whose OriginOfCondition is the system's @odata.id or lies below it).
func (d *Driver) WatchPower(ctx context.Context, notify func(bmc.PowerEvent)) (func(), error) {
	if d.closed.Load() {
		return nil, d.opErr("watch power", bmc.Permanent(errors.New("driver is closed")))
	}
	if d.s.opts.NoEventStream {
		return nil, d.opErr("watch power", fmt.Errorf("the event stream is turned off (Options.NoEventStream): %w", bmc.ErrNotSupported))
	}
	ctx = withCounts(ctx, d.counts) // opening the stream counts toward d
	d.mu.Lock()
	sys := strings.TrimSuffix(d.systemURI, "/")
	d.mu.Unlock()
	h := &d.s.events
	if err := d.openStream(ctx); err != nil {
		return nil, d.opErr("watch power", err)
	}
	w := &powerWatch{system: sys, notify: notify}
	h.mu.Lock()
	if !h.open || h.closed {
		h.mu.Unlock()
		return nil, d.opErr("watch power", bmc.Transient(errors.New("the event stream ended while the watch was registered")))
	}
	if h.watches == nil {
		h.watches = map[*powerWatch]struct{}{}
	}
	h.watches[w] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.watches, w)
			h.mu.Unlock()
		})
	}, nil
}

// openStream makes sure the session's stream is open; concurrent callers
// wait for one opener.
func (d *Driver) openStream(ctx context.Context) error {
	h := &d.s.events
	for {
		h.mu.Lock()
		if h.unsupported == nil {
			h.unsupported = h.memo.get(d.s.ep.Key())
		}
		switch {
		case h.closed:
			h.mu.Unlock()
			return errSessionClosed
		case h.unsupported != nil:
			err := h.unsupported
			h.mu.Unlock()
			return err
		case h.open && h.opening == nil:
			h.mu.Unlock()
			return nil
		case h.opening != nil:
			ch := h.opening
			h.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			h.mu.Lock()
			err := h.openErr
			h.mu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		ch := make(chan struct{})
		h.opening, h.open, h.openErr = ch, true, nil
		h.mu.Unlock()
		err := d.startStream(ctx)
		h.mu.Lock()
		h.opening, h.openErr = nil, err
		if err != nil {
			h.open = false
			if errors.Is(err, bmc.ErrNotSupported) {
				h.unsupported = err
				h.memo.set(d.s.ep.Key(), err)
			}
		}
		h.mu.Unlock()
		close(ch)
		return err
	}
}

// startStream finds the SSE URI (once per session) and opens the stream,
// whose reader then runs until the stream ends.
func (d *Driver) startStream(ctx context.Context) error {
	s := d.s
	h := &s.events
	uri, err := d.sseURI(ctx)
	if err != nil {
		return err
	}
	// The stream outlives ctx (the call that opened it): it ends with the
	// session, or when the BMC ends it. Only the opening is bounded by ctx
	// and the request timeout.
	resp, cancel, err := d.openSSE(ctx, context.WithoutCancel(ctx), uri)
	if err != nil {
		return err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		cancel()
		_ = resp.Body.Close()
		return errSessionClosed
	}
	h.cancel = cancel
	h.mu.Unlock()
	log := d.logger(ctx)
	go func() {
		err := readEvents(resp.Body, func(origins []string) { h.dispatch(origins) })
		_ = resp.Body.Close()
		cancel()
		if err == nil {
			err = errors.New("the BMC ended the event stream")
		}
		log.V(1).Info("event stream ended; waiting jobs poll", "error", err.Error())
		h.end(bmc.Transient(fmt.Errorf("event stream %s: %w", uri, err)))
	}()
	return nil
}

// sseURI finds the path of the EventService's ServerSentEventUri, once per
// session; a BMC without one is an error wrapping bmc.ErrNotSupported.
func (d *Driver) sseURI(ctx context.Context) (string, error) {
	s := d.s
	h := &s.events
	h.mu.Lock()
	uri := h.sseURI
	h.mu.Unlock()
	if uri == "" {
		var root struct {
			EventService struct {
				ODataID string `json:"@odata.id"`
			}
		}
		if err := json.Unmarshal(s.wire.serviceRoot(), &root); err != nil || root.EventService.ODataID == "" {
			return "", fmt.Errorf("the service root names no EventService: %w", bmc.ErrNotSupported)
		}
		var es struct{ ServerSentEventUri string }
		if _, err := d.getJSON(ctx, root.EventService.ODataID, &es); err != nil {
			var se *StatusError
			if errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusNotImplemented) {
				return "", fmt.Errorf("GET %s: %w (%w)", root.EventService.ODataID, bmc.ErrNotSupported, err)
			}
			return "", err
		}
		if es.ServerSentEventUri == "" {
			return "", fmt.Errorf("the EventService offers no ServerSentEventUri: %w", bmc.ErrNotSupported)
		}
		uri = pathOf(es.ServerSentEventUri)
		if uri == "" || !strings.HasPrefix(uri, "/") {
			return "", fmt.Errorf("the EventService's ServerSentEventUri %q is not a path on this BMC: %w", es.ServerSentEventUri, bmc.ErrNotSupported)
		}
		h.mu.Lock()
		h.sseURI = uri
		h.mu.Unlock()
	}
	return uri, nil
}

// openSSE sends the stream's GET of uri and returns the answer once its
// headers arrived. The opening is bounded by ctx and the request timeout;
// the stream itself lives until parent ends, cancel is called, or the BMC
// ends it. The caller closes resp.Body and calls cancel.
func (d *Driver) openSSE(ctx, parent context.Context, uri string) (*http.Response, context.CancelFunc, error) {
	s := d.s
	sctx, cancel := context.WithCancel(parent)
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, strings.TrimSuffix(s.ep.BaseURL(), "/")+uri, nil)
	if err != nil {
		cancel()
		return nil, nil, bmc.Permanent(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := s.streamClient().Do(req)
		got <- answer{resp, err}
	}()
	abandon := func() {
		cancel()
		go func() { // an answer that raced the cancel must not keep its connection
			if a := <-got; a.resp != nil {
				_ = a.resp.Body.Close()
			}
		}()
	}
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		abandon()
		return nil, nil, ctx.Err()
	case <-s.opts.Clock.After(s.opts.RequestTimeout):
		abandon()
		return nil, nil, bmc.Transient(fmt.Errorf("GET %s: no answer within the request timeout %s", uri, s.opts.RequestTimeout))
	}
	if a.err != nil {
		cancel()
		return nil, nil, classify(a.err)
	}
	resp := a.resp
	if resp.StatusCode != http.StatusOK {
		drain(resp)
		cancel()
		se := &StatusError{StatusCode: resp.StatusCode}
		switch c := resp.StatusCode; {
		case c == http.StatusNotFound || c == http.StatusMethodNotAllowed || c == http.StatusNotImplemented:
			return nil, nil, fmt.Errorf("GET %s answered %d: %w", uri, c, bmc.ErrNotSupported)
		case c == http.StatusUnauthorized || c == http.StatusForbidden:
			return nil, nil, bmc.Transient(fmt.Errorf("GET %s answered %d: %w", uri, c, se))
		case c >= 500 || c == http.StatusTooManyRequests:
			return nil, nil, bmc.Transient(fmt.Errorf("GET %s answered %d: %w", uri, c, se))
		}
		return nil, nil, fmt.Errorf("GET %s answered %d: %w", uri, resp.StatusCode, bmc.ErrNotSupported)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/event-stream") {
		drain(resp)
		cancel()
		return nil, nil, fmt.Errorf("GET %s answered Content-Type %q, not text/event-stream: %w", uri, ct, bmc.ErrNotSupported)
	}
	return resp, cancel, nil
}

// streamClient is an HTTP client for the event stream: the session's TLS
// settings and authentication on a transport of its own (see above).
func (s *session) streamClient() *http.Client {
	base := s.wire.base.Clone()
	base.MaxConnsPerHost, base.MaxIdleConnsPerHost, base.MaxIdleConns = 1, 1, 1
	return &http.Client{Transport: &streamTransport{w: s.wire, base: base}}
}

// streamTransport sends the stream's GET with the session's auth header, in
// the endpoint's request budget, counted in Stats.
type streamTransport struct {
	w    *wire
	base *http.Transport
}

func (t *streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := t.w
	if err := w.turn(req.Context()); err != nil {
		return nil, err
	}
	w.mu.Lock()
	header, value := w.header, w.value
	w.mu.Unlock()
	if header != "" {
		req = req.Clone(req.Context())
		req.Header.Set(header, value)
	}
	req = w.atConn(req)
	w.sent(req.Context())
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.base.CloseIdleConnections()
		return nil, err
	}
	resp.Body = &closeTransport{ReadCloser: resp.Body, t: t.base}
	return resp, nil
}

// closeTransport closes the stream's own transport with its body.
type closeTransport struct {
	io.ReadCloser
	t *http.Transport
}

func (c *closeTransport) Close() error {
	err := c.ReadCloser.Close()
	c.t.CloseIdleConnections()
	return err
}

// dispatch notifies the watches of the systems the records name.
func (h *eventHub) dispatch(origins []string) {
	h.mu.Lock()
	var notify []func(bmc.PowerEvent)
	for w := range h.watches {
		for _, o := range origins {
			if o == w.system || strings.HasPrefix(o, w.system+"/") {
				notify = append(notify, w.notify)
				break
			}
		}
	}
	h.mu.Unlock()
	for _, n := range notify {
		n(bmc.PowerEvent{})
	}
}

// end ends the stream: every watch gets its last event, and the next
// WatchPower opens a new stream.
func (h *eventHub) end(err error) {
	h.mu.Lock()
	ws := h.watches
	h.watches = nil
	h.open = false
	h.cancel = nil
	h.mu.Unlock()
	for w := range ws {
		w.notify(bmc.PowerEvent{Err: err})
	}
}

// close ends the stream for good (the session closes).
func (h *eventHub) close() {
	h.mu.Lock()
	h.closed = true
	cancel := h.cancel
	streams := h.streams
	h.streams = nil
	h.mu.Unlock()
	if cancel != nil {
		cancel() // the reader ends and calls end
	}
	for c := range streams {
		(*c)()
	}
}

// Limits of the SSE decoder: a BMC's stream is outside input.
const (
	maxEventLine = 64 << 10 // bytes in one line
	maxEventData = 1 << 20  // bytes of data in one event
)

// readEvents reads a Server-Sent Events stream with readSSE and calls fn
// with the resource URIs (OriginOfCondition) of each Redfish event's
// records.
func readEvents(r io.Reader, fn func(origins []string)) error {
	return readSSE(r, func(data []byte) error {
		if origins := eventOrigins(data); len(origins) > 0 {
			fn(origins)
		}
		return nil
	})
}

// readSSE decodes a Server-Sent Events stream (the WHATWG "event stream
// interpretation": lines ending in LF, CRLF or CR; "data:" lines joined by
// LF; a blank line dispatches; comments and other fields ignored) and calls
// fn with each event's data. It returns fn's error, the stream's read
// error, nil at EOF, or an error for a line or event over the limits.
// Hand-written: the standard library has no SSE reader, and the few lines
// here are easier to bound and fuzz than a dependency whose limits we
// would have to trust.
func readSSE(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxEventLine)
	sc.Split(scanSSELines)
	var data bytes.Buffer
	hasData := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if hasData {
				if err := fn(data.Bytes()); err != nil {
					return err
				}
			}
			data.Reset()
			hasData = false
			continue
		}
		if line[0] == ':' {
			continue // comment (keep-alive)
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(field) != "data" {
			continue // id, event, retry: not needed
		}
		if data.Len()+len(value)+1 > maxEventData {
			return fmt.Errorf("an event exceeds %d bytes", maxEventData)
		}
		if hasData {
			data.WriteByte('\n')
		}
		data.Write(value)
		hasData = true
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("a line of the event stream exceeds %d bytes", maxEventLine)
		}
		return err
	}
	return nil
}

// scanSSELines splits at LF, CRLF or CR.
func scanSSELines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\r' {
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if !atEOF {
				return 0, nil, nil // a CR at the end: wait for a possible LF
			}
		}
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// eventOrigins returns the resource URIs (paths, without trailing slash)
// that a Redfish Event's records name in OriginOfCondition, either as a link
// object or, in older schemas, as a string. Data that is not an Event
// yields none.
func eventOrigins(data []byte) []string {
	var ev struct {
		Events []struct {
			OriginOfCondition json.RawMessage
		}
	}
	if json.Unmarshal(data, &ev) != nil {
		return nil
	}
	var out []string
	for _, rec := range ev.Events {
		var uri string
		var link struct {
			ODataID string `json:"@odata.id"`
		}
		if json.Unmarshal(rec.OriginOfCondition, &link) == nil && link.ODataID != "" {
			uri = link.ODataID
		} else if json.Unmarshal(rec.OriginOfCondition, &uri) != nil {
			continue
		}
		if p := strings.TrimSuffix(pathOf(uri), "/"); strings.HasPrefix(p, "/") {
			out = append(out, p)
		}
	}
	return out
}
