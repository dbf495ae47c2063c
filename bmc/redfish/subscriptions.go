package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

// Event subscriptions: [Driver] implements [bmc.EventSubscriber] on the
// EventService's Subscriptions collection (EventDestination resources).
//
// The EventService is found through the service root's link and read once
// per call that needs it (it is small, and a firmware update may change
// it). Vendor shapes the driver survives (redfishtest's
// SubscriptionsILO5 and SubscriptionsOpenBMC model them):
//
//   - HPE iLO 5 lists EventTypesForSubscription and no RegistryPrefixes,
//     and refuses a subscription without EventTypes: the driver then sends
//     every type it lists (but MetricReport) when the spec names none.
//   - A BMC that refuses an optional property (iLO 5: RegistryPrefixes,
//     DeliveryRetryPolicy; bmcweb: a registry it does not list) with a 400
//     gets the subscription again with Destination, Context, Protocol,
//     EventTypes and HttpHeaders only, once.
//   - OpenBMC holds at most 20 subscriptions and answers 503
//     EventSubscriptionLimitExceeded: bmc.ErrSubscriptionLimit.
//   - SubmitTestEvent takes EventType on iLO 5 and refuses it on bmcweb:
//     sent with it, then once without it on a 400.
//
// The Destination (which carries the receiver's token) is never written to
// an error or a log: the BMC's error messages are scrubbed of it.

var _ bmc.EventSubscriber = (*Driver)(nil)

// eventServiceDoc is what the driver reads of the EventService, by
// gofish's property names.
type eventServiceDoc struct {
	ServiceEnabled *bool
	Subscriptions  struct {
		ODataID string `json:"@odata.id"`
	}
	EventTypesForSubscription []string
	RegistryPrefixes          *[]string
	Actions                   struct {
		SubmitTestEvent struct {
			Target string `json:"target"`
		} `json:"#EventService.SubmitTestEvent"`
	}
}

// eventDestinationDoc is what the driver reads of an EventDestination.
type eventDestinationDoc struct {
	ODataID          string `json:"@odata.id"`
	ID               string `json:"Id"`
	Destination      string
	Context          string
	Protocol         string
	EventTypes       []string
	RegistryPrefixes []string
}

func (e eventDestinationDoc) subscription() bmc.EventSubscription {
	id := e.ID
	if id == "" {
		id = lastSegment(e.ODataID)
	}
	return bmc.EventSubscription{ID: id, Destination: e.Destination, Context: e.Context, Protocol: e.Protocol,
		EventTypes: e.EventTypes, RegistryPrefixes: e.RegistryPrefixes}
}

// eventService reads the EventService; a BMC without one, or with its
// service disabled, is bmc.ErrNotSupported.
func (d *Driver) eventService(ctx context.Context) (*eventServiceDoc, error) {
	var root struct {
		EventService struct {
			ODataID string `json:"@odata.id"`
		}
	}
	if err := json.Unmarshal(d.s.wire.serviceRoot(), &root); err != nil || root.EventService.ODataID == "" {
		return nil, fmt.Errorf("the service root names no EventService: %w", bmc.ErrNotSupported)
	}
	var es eventServiceDoc
	if _, err := d.getJSON(ctx, root.EventService.ODataID, &es); err != nil {
		var se *StatusError
		if errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusNotImplemented) {
			return nil, fmt.Errorf("GET %s: %w (%w)", root.EventService.ODataID, bmc.ErrNotSupported, err)
		}
		return nil, err
	}
	if es.ServiceEnabled != nil && !*es.ServiceEnabled {
		return nil, fmt.Errorf("the EventService is disabled (ServiceEnabled false): %w", bmc.ErrNotSupported)
	}
	return &es, nil
}

func (es *eventServiceDoc) subscriptionsURI() (string, error) {
	if es.Subscriptions.ODataID == "" {
		return "", fmt.Errorf("the EventService has no Subscriptions collection: %w", bmc.ErrNotSupported)
	}
	return es.Subscriptions.ODataID, nil
}

// EventSubscriptions implements [bmc.EventSubscriber]: a GET of the
// EventService, of the collection and of each member.
func (d *Driver) EventSubscriptions(ctx context.Context) ([]bmc.EventSubscription, error) {
	const op = "list event subscriptions"
	done, err := d.begin()
	if err != nil {
		return nil, d.opErr(op, err)
	}
	defer done()
	es, err := d.eventService(ctx)
	if err != nil {
		return nil, d.opErr(op, err)
	}
	coll, err := es.subscriptionsURI()
	if err != nil {
		return nil, d.opErr(op, err)
	}
	members, err := d.collection(ctx, coll)
	if err != nil {
		return nil, d.opErr(op, err)
	}
	out := make([]bmc.EventSubscription, 0, len(members))
	for _, m := range members {
		var doc eventDestinationDoc
		if _, err := d.getJSON(ctx, m, &doc); err != nil {
			var se *StatusError
			if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
				continue // deleted since the listing
			}
			return nil, d.opErr(op, err)
		}
		if doc.ODataID == "" {
			doc.ODataID = m
		}
		out = append(out, doc.subscription())
	}
	return out, nil
}

// Subscribe implements [bmc.EventSubscriber]: one POST to the
// Subscriptions collection (two when the BMC refuses an optional
// property), then a GET of the new subscription.
func (d *Driver) Subscribe(ctx context.Context, spec bmc.EventSubscriptionSpec) (bmc.EventSubscription, error) {
	const op = "create event subscription"
	if err := spec.Validate(); err != nil {
		return bmc.EventSubscription{}, d.opErr(op, err)
	}
	done, err := d.begin()
	if err != nil {
		return bmc.EventSubscription{}, d.opErr(op, err)
	}
	defer done()
	scrub := func(err error) error { return d.opErr(op, scrubDestination(err, spec.Destination)) }
	es, err := d.eventService(ctx)
	if err != nil {
		return bmc.EventSubscription{}, scrub(err)
	}
	coll, err := es.subscriptionsURI()
	if err != nil {
		return bmc.EventSubscription{}, scrub(err)
	}
	full, minimal := subscriptionPayloads(es, spec)
	loc, body, err := d.postCreate(ctx, coll, full)
	var se *StatusError
	if err != nil && errors.As(err, &se) && se.StatusCode == http.StatusBadRequest && !isLimit(se) {
		d.logger(ctx).V(1).Info("the BMC refused the subscription's optional properties; creating it without them", "messageID", se.MessageID)
		loc, body, err = d.postCreate(ctx, coll, minimal)
	}
	if err != nil {
		if errors.As(err, &se) && isLimit(se) {
			err = fmt.Errorf("%w: %w", bmc.ErrSubscriptionLimit, err)
		}
		return bmc.EventSubscription{}, scrub(err)
	}
	var doc eventDestinationDoc
	if json.Unmarshal(body, &doc) != nil || doc.ODataID == "" && doc.ID == "" {
		doc = eventDestinationDoc{}
		if loc == "" {
			return bmc.EventSubscription{}, scrub(bmc.Permanent(errors.New("the BMC created the subscription but named it neither in Location nor in the body")))
		}
		if _, err := d.getJSON(ctx, loc, &doc); err != nil {
			return bmc.EventSubscription{}, scrub(err)
		}
	}
	if doc.ODataID == "" {
		doc.ODataID = loc
	}
	return doc.subscription(), nil
}

// subscriptionPayloads is the full payload of spec for es, and the
// minimal one sent when the BMC refuses the full one.
func subscriptionPayloads(es *eventServiceDoc, spec bmc.EventSubscriptionSpec) (full, minimal map[string]any) {
	minimal = map[string]any{
		"Destination": spec.Destination,
		"Context":     spec.Context,
		"Protocol":    string(schemas.RedfishEventDestinationProtocol),
	}
	if len(spec.Headers) > 0 {
		minimal["HttpHeaders"] = spec.Headers // never dropped: it may carry the credential
	}
	listed := slices.DeleteFunc(slices.Clone(es.EventTypesForSubscription), func(t string) bool { return t == "MetricReport" })
	types := spec.EventTypes
	if len(listed) > 0 && len(types) > 0 {
		types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return !slices.Contains(listed, t) })
	}
	if len(types) == 0 && len(listed) > 0 && es.RegistryPrefixes == nil {
		types = listed // an older service (iLO 5) that wants EventTypes
	}
	full = map[string]any{}
	for k, v := range minimal {
		full[k] = v
	}
	if len(types) > 0 {
		full["EventTypes"] = types
		minimal["EventTypes"] = types
	} else if len(listed) > 0 && len(spec.EventTypes) == 0 {
		minimal["EventTypes"] = listed
	}
	if prefixes := spec.RegistryPrefixes; len(prefixes) > 0 && es.RegistryPrefixes != nil {
		prefixes = slices.DeleteFunc(slices.Clone(prefixes), func(p string) bool { return !slices.Contains(*es.RegistryPrefixes, p) })
		if len(prefixes) > 0 {
			full["RegistryPrefixes"] = prefixes
		}
	}
	if spec.RetryForever {
		full["DeliveryRetryPolicy"] = string(schemas.RetryForeverDeliveryRetryPolicy)
	}
	return full, minimal
}

// postCreate POSTs body once and returns the Location (a path) and the
// answer's body.
func (d *Driver) postCreate(ctx context.Context, uri string, body any) (string, []byte, error) {
	var loc string
	var out []byte
	err := d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.Post(uri, body)
		if err != nil {
			return err
		}
		defer drain(resp)
		loc = pathOf(resp.Header.Get("Location"))
		out, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return err
	})
	return loc, out, err
}

// Unsubscribe implements [bmc.EventSubscriber]: a DELETE of the member of
// the Subscriptions collection; 404 is success.
func (d *Driver) Unsubscribe(ctx context.Context, id string) error {
	op := "delete event subscription " + bmc.QuoteBounded(id)
	if id == "" || strings.ContainsAny(id, "/?#") {
		return d.opErr(op, bmc.Permanent(errors.New("want a subscription ID as EventSubscriptions lists it")))
	}
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	es, err := d.eventService(ctx)
	if err != nil {
		return d.opErr(op, err)
	}
	coll, err := es.subscriptionsURI()
	if err != nil {
		return d.opErr(op, err)
	}
	uri := strings.TrimSuffix(coll, "/") + "/" + url.PathEscape(id)
	err = d.do(ctx, true, func(c *gofish.APIClient) error {
		resp, err := c.Delete(uri)
		drain(resp)
		return err
	})
	var se *StatusError
	if err != nil && !(errors.As(err, &se) && se.StatusCode == http.StatusNotFound) {
		return d.opErr(op, err)
	}
	return nil
}

// SubmitTestEvent implements [bmc.EventSubscriber]: a POST of the
// EventService.SubmitTestEvent action with gofish's parameters, EventType
// Alert included; on a 400 once more without EventType (bmcweb refuses
// it). No action: bmc.ErrNotSupported, after the EventService GET.
func (d *Driver) SubmitTestEvent(ctx context.Context, ev bmc.TestEvent) error {
	const op = "submit test event"
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	es, err := d.eventService(ctx)
	if err != nil {
		return d.opErr(op, err)
	}
	target := es.Actions.SubmitTestEvent.Target
	if target == "" {
		return d.opErr(op, fmt.Errorf("the EventService has no SubmitTestEvent action: %w", bmc.ErrNotSupported))
	}
	p := schemas.EventServiceSubmitTestEventParameters{
		EventID: ev.EventID, EventType: schemas.AlertEventType, Message: ev.Message, MessageID: ev.MessageID,
		Severity: string(ev.Severity), EventTimestamp: d.s.opts.Clock.Now().UTC().Format(time.RFC3339),
	}
	if p.MessageID == "" {
		p.MessageID = "ResourceEvent.1.0.TestMessage"
	}
	if p.Message == "" {
		p.Message = "bmckit test event"
	}
	if p.Severity == "" {
		p.Severity = string(bmc.SeverityOK)
	}
	post := func() error {
		return d.do(ctx, false, func(c *gofish.APIClient) error {
			resp, err := c.Post(target, p)
			drain(resp)
			return err
		})
	}
	err = post()
	var se *StatusError
	if err != nil && errors.As(err, &se) && se.StatusCode == http.StatusBadRequest {
		p.EventType = ""
		err = post()
	}
	if err != nil {
		return d.opErr(op, err)
	}
	return nil
}

// isLimit reports a BMC at its limit of subscriptions.
func isLimit(se *StatusError) bool {
	return strings.Contains(se.MessageID, "EventSubscriptionLimitExceeded") || strings.Contains(se.MessageID, "CreateLimitReachedForResource")
}

// scrubDestination removes dest (and its path, which carries the token)
// from err's text, should the BMC echo it in an error message.
func scrubDestination(err error, dest string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	u, perr := url.Parse(dest)
	secrets := []string{dest}
	if perr == nil && len(u.Path) > 1 {
		secrets = append(secrets, u.Path, u.EscapedPath())
		if i := strings.LastIndexByte(u.Path, '/'); i >= 0 && len(u.Path)-i > 8 {
			secrets = append(secrets, u.Path[i+1:])
		}
	}
	changed := false
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "<destination>")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}
