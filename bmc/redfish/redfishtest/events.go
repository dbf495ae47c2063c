package redfishtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The EventService with a Server-Sent Events stream (Config.EventStream).
//
// The service root links /redfish/v1/EventService, whose ServerSentEventUri
// is /redfish/v1/EventService/SSE. A GET of it (authenticated like any other
// request) answers 200 with Content-Type text/event-stream and keeps the
// connection open; whenever a system's PowerState settles to a new value
// (a change landed, or took effect at once) every open stream receives one
// Redfish Event with a ResourceChanged record whose OriginOfCondition is the
// system's @odata.id:
//
//	id: 7
//	data: {"@odata.type":"#Event.v1_7_0.Event","Id":"7","Name":"Event Array","Events":[{"EventId":"7",
//	data:  "MessageId":"ResourceEvent.1.2.ResourceChanged","OriginOfCondition":{"@odata.id":"/redfish/v1/Systems/1"},...}]}
//
// Every event a test emits ([Server.EmitEvent], SubmitTestEvent) is also
// sent whole to every open stream, with the EventId, EventTimestamp and
// records of the copies pushed to subscriptions (Context ""), as bmcweb
// does: a client that reads both sees one event twice.
//
// Transitional states (PoweringOn/PoweringOff) send no event, as on BMCs that
// report the completed change. Changes are noticed by a watcher that checks
// the systems every 10 ms of wall time while a stream is open (so with a
// fake Config.Clock, the event follows the clock's advance within 10 ms).
// [Server.BreakEventStreams] ends the open streams (a BMC that drops them),
// [Server.SetEventStream] switches the stream off and on at run time, and
// [Server.EventStreams] counts the open ones.

const (
	eventServiceURI = root + "/EventService"
	sseURI          = eventServiceURI + "/SSE"
	eventScan       = 10 * time.Millisecond
)

// eventHub is the Server's event stream state.
type eventHub struct {
	mu       sync.Mutex
	disabled bool // SetEventStream(false)
	closed   bool // the Server closed
	subs     map[*eventSub]struct{}
	seq      int64
	scanning bool
}

type eventSub struct {
	// last is the settled PowerState by system ID that this stream last
	// reported (or found when it opened): a stream reports only changes
	// that landed after it opened.
	last map[string]string
	ch   chan []byte   // encoded events; a slow reader loses the stream
	done chan struct{} // closed to end the stream
	once sync.Once
}

func (e *eventSub) end() { e.once.Do(func() { close(e.done) }) }

// Unwrap lets http.ResponseController reach the connection's Flusher through
// the request log's recorder.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// eventsOn reports whether the stream is offered now.
func (s *Server) eventsOn() bool {
	if !s.cfg.EventStream {
		return false
	}
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	return !s.events.disabled && !s.events.closed
}

// SetEventStream switches the EventService's SSE stream off (open streams
// end, the EventService answers without ServerSentEventUri and the stream
// URI 404) or back on. Only for a Server whose Config.EventStream is set.
func (s *Server) SetEventStream(on bool) {
	s.events.mu.Lock()
	s.events.disabled = !on
	subs := s.events.subs
	if !on {
		s.events.subs = nil
	}
	s.events.mu.Unlock()
	if !on {
		for sub := range subs {
			sub.end()
		}
	}
}

// BreakEventStreams ends every open event stream, as a BMC that drops them
// does; clients may open new ones.
func (s *Server) BreakEventStreams() {
	s.events.mu.Lock()
	subs := s.events.subs
	s.events.subs = nil
	s.events.mu.Unlock()
	for sub := range subs {
		sub.end()
	}
}

// EventStreams is the number of open event streams.
func (s *Server) EventStreams() int {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	return len(s.events.subs)
}

// closeEvents ends every stream for good (Server.Close waits for handlers).
func (s *Server) closeEvents() {
	s.events.mu.Lock()
	s.events.closed = true
	s.events.mu.Unlock()
	s.BreakEventStreams()
}

func (s *Server) getEventService(w http.ResponseWriter, _ *http.Request) {
	if !s.cfg.EventStream && !s.subscriptionsOn() {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no resource at "+eventServiceURI)
		return
	}
	doc := map[string]any{
		"@odata.id":        eventServiceURI,
		"@odata.type":      "#EventService.v1_7_0.EventService",
		"Id":               "EventService",
		"Name":             "Event Service",
		"ServiceEnabled":   true,
		"EventFormatTypes": []string{"Event"},
		"RegistryPrefixes": []string{"ResourceEvent"},
	}
	if s.eventsOn() {
		doc["ServerSentEventUri"] = sseURI
	}
	s.subscriptionProps(doc) // subscriptions.go
	writeJSON(w, http.StatusOK, "", doc)
}

func (s *Server) eventStream(w http.ResponseWriter, r *http.Request) {
	if !s.eventsOn() {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no event stream at "+sseURI)
		return
	}
	sub := &eventSub{ch: make(chan []byte, 64), done: make(chan struct{})}
	s.subscribe(sub)
	defer s.unsubscribe(sub)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(": redfishtest event stream\n\n"))
	if err := rc.Flush(); err != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sub.done:
			return
		case b := <-sub.ch:
			if _, err := w.Write(b); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

func (s *Server) subscribe(sub *eventSub) {
	h := &s.events
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*eventSub]struct{}{}
	}
	sub.last = map[string]string{}
	s.mu.Lock()
	s.settleAll()
	for _, sys := range s.systems {
		sub.last[sys.id] = sys.power
	}
	s.mu.Unlock()
	h.subs[sub] = struct{}{}
	if !h.scanning {
		h.scanning = true
		go s.scanEvents()
	}
}

func (s *Server) unsubscribe(sub *eventSub) {
	s.events.mu.Lock()
	delete(s.events.subs, sub)
	s.events.mu.Unlock()
}

// scanEvents watches the systems' settled power while streams are open.
func (s *Server) scanEvents() {
	t := time.NewTicker(eventScan)
	defer t.Stop()
	for range t.C {
		h := &s.events
		h.mu.Lock()
		if len(h.subs) == 0 {
			h.scanning = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		type change struct{ id, power string }
		var changes []change
		s.mu.Lock()
		s.settleAll()
		for _, sys := range s.systems {
			changes = append(changes, change{sys.id, sys.power})
		}
		s.mu.Unlock()
		h.mu.Lock()
		for _, c := range changes {
			var b []byte
			for sub := range h.subs {
				if sub.last[c.id] == c.power {
					continue
				}
				sub.last[c.id] = c.power
				if b == nil {
					h.seq++
					b = encodeEvent(h.seq, root+"/Systems/"+c.id, c.power, time.Now())
				}
				select {
				case sub.ch <- b:
				default: // a reader that fell 64 events behind loses its stream
					delete(h.subs, sub)
					sub.end()
				}
			}
		}
		h.mu.Unlock()
	}
}

// streamEvent sends one Redfish Event document to every open stream (a
// reader 64 events behind loses its stream, as in scanEvents).
func (s *Server) streamEvent(id string, doc []byte) {
	if !s.eventsOn() {
		return
	}
	b := []byte("id: " + id + "\ndata: " + string(doc) + "\n\n")
	h := &s.events
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		select {
		case sub.ch <- b:
		default:
			delete(h.subs, sub)
			sub.end()
		}
	}
}

// encodeEvent is one SSE message carrying a Redfish Event.
func encodeEvent(seq int64, origin, power string, at time.Time) []byte {
	id := strconv.FormatInt(seq, 10)
	doc := map[string]any{
		"@odata.type": "#Event.v1_7_0.Event",
		"Id":          id,
		"Name":        "Event Array",
		"Context":     "",
		"Events": []map[string]any{{
			"EventType":         "ResourceChanged",
			"EventId":           id,
			"EventTimestamp":    at.UTC().Format(time.RFC3339),
			"MessageId":         "ResourceEvent.1.2.ResourceChanged",
			"Message":           fmt.Sprintf("PowerState of %s changed to %s.", origin, power),
			"MessageArgs":       []string{},
			"OriginOfCondition": map[string]string{"@odata.id": origin},
		}},
	}
	b, _ := json.Marshal(doc)
	return []byte("id: " + id + "\ndata: " + string(b) + "\n\n")
}
