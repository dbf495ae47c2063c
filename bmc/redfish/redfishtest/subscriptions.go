package redfishtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event subscriptions (Config.Subscriptions): the EventService's
// Subscriptions collection, pushes to each subscription's Destination, and
// the SubmitTestEvent action.
//
//   - GET/POST /redfish/v1/EventService/Subscriptions, GET/DELETE
//     .../Subscriptions/{id}: EventDestination resources. A POST needs an
//     absolute http(s) Destination; Protocol, when given, must be
//     "Redfish"; it answers 201 with Location and the resource.
//   - [Server.EmitEvent] (and the SubmitTestEvent action) queue one event
//     for every subscription whose EventTypes and RegistryPrefixes match.
//     Each subscription has one delivery goroutine that posts its queue in
//     order, one Redfish Event (one record) per POST, with the
//     subscription's HttpHeaders. A push that gets no 2xx is sent again,
//     the same body and EventId, after Config.EventRetryInterval, like a
//     BMC; after Config.EventRetryAttempts failed attempts the event is
//     dropped (DeliveryRetryPolicy RetryForever: never), and with
//     TerminateAfterRetries the subscription is deleted, as the Redfish
//     specification says.
//   - [Server.DropSubscriptions] forgets every subscription, as BMCs do
//     after a reset or a firmware update; [Server.Subscriptions],
//     [Server.Deliveries] and [Server.FlushEvents] let a test look.
//
// Personalities (SubscriptionStyle): SubscriptionsDMTF accepts every
// property; SubscriptionsILO5 lists EventTypesForSubscription but no
// RegistryPrefixes, refuses RegistryPrefixes and DeliveryRetryPolicy (400
// PropertyUnknown) and a subscription without EventTypes (400
// PropertyMissing), wants EventType in SubmitTestEvent and writes
// Severity (not MessageSeverity) in its events; SubscriptionsOpenBMC
// (bmcweb) holds at most 20 subscriptions (503
// EventSubscriptionLimitExceeded), accepts only the Base, OpenBMC and
// TaskEvent registries, gives subscriptions random numeric IDs, reports
// HttpHeaders as an empty list and refuses EventType in SubmitTestEvent
// (400 ActionParameterUnknown).

// SubscriptionStyle selects the EventService subscription personality.
type SubscriptionStyle string

// Subscription personalities.
const (
	// SubscriptionsNone: no Subscriptions collection (the default).
	SubscriptionsNone SubscriptionStyle = ""
	// SubscriptionsDMTF: the Redfish specification's shape.
	SubscriptionsDMTF SubscriptionStyle = "dmtf"
	// SubscriptionsILO5: HPE iLO 5's.
	SubscriptionsILO5 SubscriptionStyle = "ilo5"
	// SubscriptionsOpenBMC: OpenBMC bmcweb's.
	SubscriptionsOpenBMC SubscriptionStyle = "openbmc"
)

const (
	subscriptionsURI   = eventServiceURI + "/Subscriptions"
	submitTestEventURI = eventServiceURI + "/Actions/EventService.SubmitTestEvent"
	openBMCMaxSubs     = 20
	dmtfMaxSubs        = 100
)

// Subscription is a snapshot of one subscription.
type Subscription struct {
	ID, Destination, Context, Protocol string
	EventTypes, RegistryPrefixes       []string
	Headers                            map[string]string
	// RetryPolicy is the DeliveryRetryPolicy ("" when not set).
	RetryPolicy string
	// Pending counts the events queued and not yet delivered.
	Pending int
}

// Event is an event a test makes the BMC send ([Server.EmitEvent]).
type Event struct {
	// EventType defaults to Alert; Severity to OK; MessageID to
	// "ResourceEvent.1.0.ResourceChanged"; Origin (OriginOfCondition) to
	// /redfish/v1/Systems/1.
	EventType, Severity, Message, MessageID, Origin string
	// EventID defaults to the BMC's next number.
	EventID string
}

// Delivery is one push attempt.
type Delivery struct {
	Subscription, EventID string
	// Attempt counts from 1 for each event.
	Attempt int
	// Status is the HTTP status answered, 0 when there was no answer
	// (Err says why).
	Status int
	Err    string
}

type subscriptionHub struct {
	mu      sync.Mutex
	subs    []*simSub
	nextID  int
	seq     int64
	closed  bool
	log     []Delivery
	changed chan struct{} // closed and replaced whenever a queue shrinks
	wg      sync.WaitGroup
	client  *http.Client
}

type simSub struct {
	Subscription
	queue [][2]string // (event ID, body)
	wake  chan struct{}
	gone  chan struct{}
}

// subscriptionsOn reports whether the Subscriptions collection is offered.
func (s *Server) subscriptionsOn() bool { return s.cfg.Subscriptions != SubscriptionsNone }

func (s *Server) subscriptionRoutes(handle func(method, path string, h http.HandlerFunc)) {
	if !s.subscriptionsOn() {
		return
	}
	handle("GET", subscriptionsURI, s.auth(s.listSubscriptions))
	handle("POST", subscriptionsURI, s.auth(s.createSubscription))
	handle("GET", subscriptionsURI+"/{id}", s.auth(s.getSubscription))
	handle("DELETE", subscriptionsURI+"/{id}", s.auth(s.deleteSubscription))
	handle("POST", submitTestEventURI, s.auth(s.submitTestEvent))
}

// subscriptionProps adds the subscription properties to the
// EventService document.
func (s *Server) subscriptionProps(doc map[string]any) {
	if !s.subscriptionsOn() {
		return
	}
	doc["Subscriptions"] = link(subscriptionsURI)
	doc["Actions"] = map[string]any{"#EventService.SubmitTestEvent": map[string]any{"target": submitTestEventURI}}
	doc["DeliveryRetryAttempts"] = s.retryAttempts()
	doc["DeliveryRetryIntervalSeconds"] = int(s.retryInterval().Seconds())
	switch s.cfg.Subscriptions {
	case SubscriptionsILO5:
		delete(doc, "RegistryPrefixes")
		doc["EventTypesForSubscription"] = []string{"StatusChange", "ResourceUpdated", "ResourceAdded", "ResourceRemoved", "Alert"}
	case SubscriptionsOpenBMC:
		doc["RegistryPrefixes"] = []string{"Base", "OpenBMC", "TaskEvent"}
		doc["EventFormatTypes"] = []string{"Event", "MetricReport"}
	default:
		doc["EventTypesForSubscription"] = []string{"StatusChange", "ResourceUpdated", "ResourceAdded", "ResourceRemoved", "Alert", "MetricReport"}
		doc["RegistryPrefixes"] = []string{"Base", "ResourceEvent", "TaskEvent"}
	}
}

func (s *Server) retryAttempts() int {
	if s.cfg.EventRetryAttempts > 0 {
		return s.cfg.EventRetryAttempts
	}
	return 3
}

func (s *Server) retryInterval() time.Duration {
	if s.cfg.EventRetryInterval > 0 {
		return s.cfg.EventRetryInterval
	}
	return 50 * time.Millisecond
}

func (s *Server) listSubscriptions(w http.ResponseWriter, _ *http.Request) {
	h := &s.subs
	h.mu.Lock()
	members := make([]map[string]string, 0, len(h.subs))
	for _, sub := range h.subs {
		members = append(members, link(subscriptionsURI+"/"+sub.ID))
	}
	h.mu.Unlock()
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id":           subscriptionsURI,
		"@odata.type":         "#EventDestinationCollection.EventDestinationCollection",
		"Name":                "Event Subscriptions",
		"Members":             members,
		"Members@odata.count": len(members),
	})
}

func (s *Server) subscriptionDoc(sub *simSub) map[string]any {
	doc := map[string]any{
		"@odata.id":        subscriptionsURI + "/" + sub.ID,
		"@odata.type":      "#EventDestination.v1_13_0.EventDestination",
		"Id":               sub.ID,
		"Name":             "Event Subscription",
		"Destination":      sub.Destination,
		"Context":          sub.Context,
		"Protocol":         sub.Protocol,
		"SubscriptionType": "RedfishEvent",
		"EventTypes":       sub.EventTypes,
	}
	switch s.cfg.Subscriptions {
	case SubscriptionsILO5:
	case SubscriptionsOpenBMC:
		doc["HttpHeaders"] = []any{}
		doc["RegistryPrefixes"] = sub.RegistryPrefixes
		doc["DeliveryRetryPolicy"] = sub.RetryPolicy
	default:
		doc["RegistryPrefixes"] = sub.RegistryPrefixes
		if sub.RetryPolicy != "" {
			doc["DeliveryRetryPolicy"] = sub.RetryPolicy
		}
	}
	return doc
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) {
	h := &s.subs
	h.mu.Lock()
	sub := h.find(r.PathValue("id"))
	var doc map[string]any
	if sub != nil {
		doc = s.subscriptionDoc(sub)
	}
	h.mu.Unlock()
	if sub == nil {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no subscription at "+r.URL.Path)
		return
	}
	writeJSON(w, http.StatusOK, "", doc)
}

func (h *subscriptionHub) find(id string) *simSub {
	for _, sub := range h.subs {
		if sub.ID == id {
			return sub
		}
	}
	return nil
}

func (s *Server) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	h := &s.subs
	h.mu.Lock()
	sub := h.find(r.PathValue("id"))
	if sub != nil {
		h.remove(sub)
	}
	h.mu.Unlock()
	if sub == nil {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no subscription at "+r.URL.Path)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// remove takes sub out; called with h.mu held.
func (h *subscriptionHub) remove(sub *simSub) {
	h.subs = slices.DeleteFunc(h.subs, func(x *simSub) bool { return x == sub })
	sub.queue = nil
	close(sub.gone)
	h.notify()
}

// notify wakes FlushEvents; called with h.mu held.
func (h *subscriptionHub) notify() {
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "the request body is not a JSON object")
		return
	}
	str := func(k string) (string, bool) {
		var v string
		raw, ok := body[k]
		return v, ok && json.Unmarshal(raw, &v) == nil
	}
	list := func(k string) []string {
		var v []string
		_ = json.Unmarshal(body[k], &v)
		return v
	}
	style := s.cfg.Subscriptions
	if style == SubscriptionsILO5 {
		for _, k := range []string{"RegistryPrefixes", "DeliveryRetryPolicy", "ResourceTypes"} {
			if _, ok := body[k]; ok {
				redfishError(w, http.StatusBadRequest, "Base.1.4.PropertyUnknown", "the property "+k+" is not in the list of valid properties for the resource")
				return
			}
		}
		if len(list("EventTypes")) == 0 {
			redfishError(w, http.StatusBadRequest, "Base.1.4.PropertyMissing", "the property EventTypes is a required property and must be included in the request")
			return
		}
	}
	dest, _ := str("Destination")
	u, err := url.Parse(dest)
	if dest == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Real BMCs echo the value here; the simulator does not, so that
		// a test can check a client's errors carry no credential of its
		// own making.
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueFormatError", "the value for the property Destination is not an absolute http or https URI")
		return
	}
	proto, hasProto := str("Protocol")
	if hasProto && proto != "Redfish" {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "the value for the property Protocol is not in the list of acceptable values")
		return
	}
	prefixes := list("RegistryPrefixes")
	if style == SubscriptionsOpenBMC {
		for _, p := range prefixes {
			if !slices.Contains([]string{"Base", "OpenBMC", "TaskEvent"}, p) {
				redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "a value of the property RegistryPrefixes is not in the list of acceptable values")
				return
			}
		}
	}
	var headers map[string]string
	if raw, ok := body["HttpHeaders"]; ok && json.Unmarshal(raw, &headers) != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "the property HttpHeaders has the wrong type")
		return
	}
	ctxStr, _ := str("Context")
	policy, _ := str("DeliveryRetryPolicy")
	h := &s.subs
	h.mu.Lock()
	limit := dmtfMaxSubs
	if style == SubscriptionsOpenBMC {
		limit = openBMCMaxSubs
	}
	if h.closed || len(h.subs) >= limit {
		h.mu.Unlock()
		redfishError(w, http.StatusServiceUnavailable, "Base.1.8.1.EventSubscriptionLimitExceeded", "the event subscription failed due to the number of simultaneous subscriptions exceeding the limit of the implementation")
		return
	}
	h.nextID++
	id := strconv.Itoa(h.nextID)
	if style == SubscriptionsOpenBMC {
		n, _ := rand.Int(rand.Reader, big.NewInt(1e9))
		id = strconv.FormatInt(n.Int64()+1e9, 10)
	}
	sub := &simSub{Subscription: Subscription{ID: id, Destination: dest, Context: ctxStr, Protocol: "Redfish",
		EventTypes: list("EventTypes"), RegistryPrefixes: prefixes, Headers: headers, RetryPolicy: policy},
		wake: make(chan struct{}, 1), gone: make(chan struct{})}
	if style == SubscriptionsOpenBMC && sub.RetryPolicy == "" {
		sub.RetryPolicy = "TerminateAfterRetries"
	}
	h.subs = append(h.subs, sub)
	doc := s.subscriptionDoc(sub)
	h.wg.Add(1)
	go s.deliver(sub)
	h.mu.Unlock()
	w.Header().Set("Location", subscriptionsURI+"/"+id)
	writeJSON(w, http.StatusCreated, "", doc)
}

func (s *Server) submitTestEvent(w http.ResponseWriter, r *http.Request) {
	var p struct {
		EventType, EventID, Message, MessageID, OriginOfCondition, Severity, MessageSeverity *string
	}
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "the request body is not a JSON object")
		return
	}
	b, _ := json.Marshal(raw)
	_ = json.Unmarshal(bytes.ReplaceAll(bytes.ReplaceAll(b, []byte(`"EventId"`), []byte(`"EventID"`)), []byte(`"MessageId"`), []byte(`"MessageID"`)), &p)
	switch s.cfg.Subscriptions {
	case SubscriptionsILO5:
		if p.EventType == nil {
			redfishError(w, http.StatusBadRequest, "Base.1.4.ActionParameterMissing", "the action SubmitTestEvent requires the parameter EventType to be present in the request body")
			return
		}
	case SubscriptionsOpenBMC:
		if p.EventType != nil {
			redfishError(w, http.StatusBadRequest, "Base.1.8.ActionParameterUnknown", "the action SubmitTestEvent was submitted with the invalid parameter EventType")
			return
		}
	}
	val := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	sev := val(p.Severity)
	if sev == "" {
		sev = val(p.MessageSeverity)
	}
	s.EmitEvent(Event{EventType: val(p.EventType), EventID: val(p.EventID), Message: val(p.Message),
		MessageID: val(p.MessageID), Origin: val(p.OriginOfCondition), Severity: sev})
	w.WriteHeader(http.StatusNoContent)
}

// EmitEvent makes the BMC send ev to every matching subscription, and
// returns its EventId. Delivery is asynchronous: see [Server.FlushEvents].
func (s *Server) EmitEvent(ev Event) string {
	if ev.EventType == "" {
		ev.EventType = "Alert"
	}
	if ev.Severity == "" {
		ev.Severity = "OK"
	}
	if ev.MessageID == "" {
		ev.MessageID = "ResourceEvent.1.0.ResourceChanged"
	}
	if ev.Origin == "" {
		ev.Origin = root + "/Systems/1"
	}
	at := s.now() // one timestamp for every copy: a pushed and a streamed copy are one event
	h := &s.subs
	h.mu.Lock()
	h.seq++
	seq := h.seq
	if ev.EventID == "" {
		ev.EventID = strconv.FormatInt(seq, 10)
	}
	for _, sub := range h.subs {
		if !sub.matches(ev) {
			continue
		}
		sub.queue = append(sub.queue, [2]string{ev.EventID, string(s.eventBody(sub.Context, ev, seq, at))})
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
	s.streamEvent(ev.EventID, s.eventBody("", ev, seq, at)) // events.go
	return ev.EventID
}

func (sub *simSub) matches(ev Event) bool {
	if len(sub.EventTypes) > 0 && !slices.Contains(sub.EventTypes, ev.EventType) {
		return false
	}
	if len(sub.RegistryPrefixes) > 0 {
		prefix, _, _ := strings.Cut(ev.MessageID, ".")
		if !slices.Contains(sub.RegistryPrefixes, prefix) {
			return false
		}
	}
	return true
}

// eventBody is the Redfish Event pushed (or streamed) for ev, with the
// subscription's Context.
func (s *Server) eventBody(evContext string, ev Event, seq int64, at time.Time) []byte {
	rec := map[string]any{
		"EventType":         ev.EventType,
		"EventId":           ev.EventID,
		"EventTimestamp":    at.UTC().Format(time.RFC3339),
		"Message":           ev.Message,
		"MessageId":         ev.MessageID,
		"MessageArgs":       []string{},
		"OriginOfCondition": link(ev.Origin),
	}
	if s.cfg.Subscriptions == SubscriptionsILO5 {
		rec["Severity"] = ev.Severity
	} else {
		rec["MessageSeverity"] = ev.Severity
	}
	b, _ := json.Marshal(map[string]any{
		"@odata.type": "#Event.v1_7_0.Event",
		"Id":          strconv.FormatInt(seq, 10),
		"Name":        "Event Array",
		"Context":     evContext,
		"Events":      []any{rec},
	})
	return b
}

// deliver posts sub's queue in order until sub is deleted or the Server
// closes.
func (s *Server) deliver(sub *simSub) {
	h := &s.subs
	defer h.wg.Done()
	for {
		select {
		case <-sub.gone:
			return
		default:
		}
		h.mu.Lock()
		if len(sub.queue) == 0 {
			h.mu.Unlock()
			select {
			case <-sub.wake:
				continue
			case <-sub.gone:
				return
			}
		}
		next := sub.queue[0]
		h.mu.Unlock()
		delivered := false
		for attempt := 1; !delivered; attempt++ {
			d := Delivery{Subscription: sub.ID, EventID: next[0], Attempt: attempt}
			d.Status, d.Err = s.push(sub, []byte(next[1]))
			delivered = d.Status >= 200 && d.Status < 300
			h.mu.Lock()
			h.log = append(h.log, d)
			h.mu.Unlock()
			if delivered {
				break
			}
			if sub.RetryPolicy != "RetryForever" && attempt >= s.retryAttempts() {
				break
			}
			select {
			case <-time.After(s.retryInterval()):
			case <-sub.gone:
				return
			}
		}
		h.mu.Lock()
		if len(sub.queue) > 0 {
			sub.queue = sub.queue[1:]
		}
		if !delivered && sub.RetryPolicy == "TerminateAfterRetries" && h.find(sub.ID) == sub {
			h.remove(sub)
		}
		h.notify()
		h.mu.Unlock()
	}
}

func (s *Server) push(sub *simSub, body []byte) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		select {
		case <-sub.gone:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Destination, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range sub.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.subs.httpClient().Do(req)
	if err != nil {
		return 0, "no answer"
	}
	_ = resp.Body.Close()
	return resp.StatusCode, ""
}

func (h *subscriptionHub) httpClient() *http.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client == nil {
		// BMCs do not verify the destination's certificate unless told
		// to (and a test's receiver has a self-signed one).
		h.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // simulated BMC
	}
	return h.client
}

// Subscriptions returns the subscriptions the BMC holds, in creation
// order.
func (s *Server) Subscriptions() []Subscription {
	h := &s.subs
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Subscription, 0, len(h.subs))
	for _, sub := range h.subs {
		c := sub.Subscription
		c.Pending = len(sub.queue)
		out = append(out, c)
	}
	return out
}

// DropSubscriptions forgets every subscription and its queued events, as
// BMCs do after a reset or a firmware update.
func (s *Server) DropSubscriptions() {
	h := &s.subs
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sub := range slices.Clone(h.subs) {
		h.remove(sub)
	}
}

// Deliveries returns every push attempt so far.
func (s *Server) Deliveries() []Delivery {
	h := &s.subs
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

// FlushEvents waits until no subscription has an event queued (each was
// delivered, or dropped after its retries), or ctx ends.
func (s *Server) FlushEvents(ctx context.Context) error {
	h := &s.subs
	for {
		h.mu.Lock()
		pending := 0
		for _, sub := range h.subs {
			pending += len(sub.queue)
		}
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		ch := h.changed
		h.mu.Unlock()
		if pending == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("redfishtest: %d events still queued: %w", pending, ctx.Err())
		}
	}
}

// closeSubscriptions stops every delivery (Server.Close).
func (s *Server) closeSubscriptions() {
	h := &s.subs
	h.mu.Lock()
	h.closed = true
	for _, sub := range slices.Clone(h.subs) {
		h.remove(sub)
	}
	h.mu.Unlock()
	h.wg.Wait()
	if c := h.httpClient(); c != nil {
		c.CloseIdleConnections()
	}
}
