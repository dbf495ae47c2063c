package bmc

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// EventSubscriber is implemented by drivers that can manage the BMC's
// event subscriptions: destinations the BMC pushes its events to (Redfish:
// the EventService's Subscriptions collection of EventDestination
// resources). Package bmcevents keeps exactly one subscription per BMC for
// a host with it (its Manager.Ensure); see docs/health-events.md.
//
// A subscription's Destination usually carries a credential (the
// receiver's per-BMC token in its path): implementations never put a
// Destination into an error or a log, and callers must not either. A BMC
// without the feature fails with an error wrapping [ErrNotSupported].
// Methods are safe for concurrent use.
type EventSubscriber interface {
	// EventSubscriptions lists the BMC's subscriptions, every owner's, in
	// the BMC's order. It changes nothing.
	EventSubscriptions(ctx context.Context) ([]EventSubscription, error)

	// Subscribe creates a subscription and returns it as the BMC holds it.
	// Not idempotent: a second call creates a second subscription (list
	// first; bmcevents does). The spec is checked before any request
	// ([EventSubscriptionSpec.Validate]). A BMC that refuses an optional
	// property (EventTypes it does not list, DeliveryRetryPolicy) gets the
	// subscription without it; a BMC at its limit of subscriptions fails
	// with an error wrapping [ErrSubscriptionLimit].
	Subscribe(ctx context.Context, spec EventSubscriptionSpec) (EventSubscription, error)

	// Unsubscribe deletes the subscription with the given ID. Deleting
	// one that is already gone succeeds (idempotent).
	Unsubscribe(ctx context.Context, id string) error

	// SubmitTestEvent asks the BMC to send a test event to its
	// subscriptions (Redfish: EventService.SubmitTestEvent). It returns
	// once the BMC accepted the request; delivery is the BMC's. A BMC that
	// does not offer it fails with an error wrapping [ErrNotSupported].
	SubmitTestEvent(ctx context.Context, ev TestEvent) error
}

// ErrSubscriptionLimit reports that the BMC holds as many subscriptions as
// it can (OpenBMC: 20; Redfish EventSubscriptionLimitExceeded). Delete one
// first. Transient: a retry after a delete can succeed.
var ErrSubscriptionLimit = errors.New("the BMC holds as many event subscriptions as it can")

// EventSubscription is a subscription as the BMC holds it.
type EventSubscription struct {
	// ID is the BMC's ID of the subscription (Redfish: the
	// EventDestination's Id), what Unsubscribe takes.
	ID string `json:"id"`
	// Destination is the URL events are posted to, as the BMC reports it
	// ("" when it does not). It may carry a credential: never log it.
	Destination string `json:"-"`
	// Context is the client's string the BMC sends back with each event:
	// bmcevents writes the owner's name there.
	Context string `json:"context,omitempty"`
	// Protocol is the delivery protocol, "Redfish" for HTTP pushes.
	Protocol string `json:"protocol,omitempty"`
	// EventTypes and RegistryPrefixes are the filters the BMC applies
	// (empty: all events).
	EventTypes       []string `json:"eventTypes,omitempty"`
	RegistryPrefixes []string `json:"registryPrefixes,omitempty"`
}

// String names the subscription without its Destination.
func (s EventSubscription) String() string {
	return fmt.Sprintf("subscription %s (context %s)", QuoteBounded(s.ID), QuoteBounded(s.Context))
}

// EventSubscriptionSpec is what [EventSubscriber.Subscribe] creates.
type EventSubscriptionSpec struct {
	// Destination is the absolute http or https URL the BMC posts events
	// to. Required. Put a credential in its path, not in user info or the
	// query (some BMCs drop both).
	Destination string
	// Context names the owner; the BMC sends it back with every event.
	// Required, at most 256 bytes of printable text.
	Context string
	// EventTypes filters by the deprecated Redfish EventType (e.g. Alert,
	// StatusChange). Defaults to none; a BMC that requires them (HPE iLO
	// 5) gets every type it lists for subscriptions.
	EventTypes []string
	// RegistryPrefixes filters by message registry (e.g. "Base",
	// "OpenBMC"); those the BMC does not list are left out. Defaults to
	// none: every registry.
	RegistryPrefixes []string
	// Headers are HTTP headers the BMC adds to every push (Redfish
	// HttpHeaders). BMCs do not report them back. Defaults to none.
	Headers map[string]string
	// RetryForever asks the BMC to keep retrying a destination that does
	// not answer instead of suspending or dropping the subscription
	// (Redfish DeliveryRetryPolicy RetryForever), where it offers that.
	RetryForever bool
}

// Validate checks the spec before anything is sent. Errors never contain
// the Destination.
func (s EventSubscriptionSpec) Validate() error {
	u, err := url.Parse(s.Destination)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return Permanent(fmt.Errorf("event subscription Destination: want an absolute http or https URL without user info"))
	}
	if s.Context == "" || len(s.Context) > 256 || strings.ContainsFunc(s.Context, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return Permanent(fmt.Errorf("event subscription Context %s: want 1 to 256 bytes of printable text", QuoteBounded(s.Context)))
	}
	for k, v := range s.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(v, "\r\n") {
			return Permanent(fmt.Errorf("event subscription header %s: want a header name and a one-line value", QuoteBounded(k)))
		}
	}
	return nil
}

// TestEvent is the event [EventSubscriber.SubmitTestEvent] asks for. Every
// field is optional; BMCs that need one get a default.
type TestEvent struct {
	// EventID is the event's ID (a BMC may replace it with its own).
	EventID string
	// MessageID names the message in its registry; drivers default it
	// (Redfish: "ResourceEvent.1.0.TestMessage"). Message defaults to a
	// line naming bmckit.
	MessageID string
	Message   string
	// Severity defaults to OK.
	Severity Severity
}
