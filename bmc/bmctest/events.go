package bmctest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// EventPeer lets the Events/... subtests see the subscriptions the peer
// holds. Setting it in a [Target] says the peer offers event
// subscriptions; without it those subtests skip.
type EventPeer struct {
	// Subscriptions returns the subscriptions the peer holds, every
	// owner's, Destination included. Required.
	Subscriptions func() []bmc.EventSubscription
	// TestEvents, when set, counts the test events the peer was asked
	// for: Events/TestEvent checks that SubmitTestEvent added one.
	// Defaults to nil.
	TestEvents func() int
	// Delivers says the peer posts events to a subscription's
	// Destination over HTTP: Events/TestEvent then subscribes a receiver
	// of its own on 127.0.0.1 and waits (Options.SettleTimeout) for the
	// test event. Defaults to false.
	Delivers bool
}

// events checks bmc.EventSubscriber:
//
//   - Subscribe: a subscription is created with an ID and the Context
//     asked for, listed by EventSubscriptions and held by the peer at the
//     Destination asked for; a spec without a valid Destination is
//     refused with a permanent error, nothing created;
//   - List: two subscriptions of two owners are both listed, with
//     distinct IDs;
//   - Unsubscribe: the subscription is gone from the list and the peer;
//     a second Unsubscribe succeeds;
//   - TestEvent: SubmitTestEvent is accepted (or the peer lacks it:
//     bmc.ErrNotSupported, skip) and, where the peer delivers, reaches
//     the subscription's Destination as a Redfish Event.
//
// Destinations carry a token in their path, as bmcevents' do; no error
// may contain one.
func (s *suite) events(t *testing.T, path string) {
	s.run(t, path, "Subscribe", func(tc *tcase) {
		sub, peer := tc.subscriber()
		dest := "http://127.0.0.1:9/bmctest-events/src/Zq7tokenSubscribe"
		got, err := sub.Subscribe(tc.ctx(), bmc.EventSubscriptionSpec{Destination: dest, Context: "bmctest:subscribe", RetryForever: true})
		tc.noDestination("Subscribe", err, dest)
		tc.noErr("Subscribe", err)
		if got.ID == "" || got.Context != "bmctest:subscribe" {
			tc.Errorf("Subscribe returned %s; want an ID and Context %q", got, "bmctest:subscribe")
		}
		tc.wantListed(sub, got.ID, "bmctest:subscribe")
		if !slices.ContainsFunc(peer.Subscriptions(), func(p bmc.EventSubscription) bool { return p.ID == got.ID && p.Destination == dest }) {
			tc.Errorf("the peer holds no subscription %s at the Destination asked for", got)
		}
		n := len(peer.Subscriptions())
		_, err = sub.Subscribe(tc.ctx(), bmc.EventSubscriptionSpec{Destination: "ftp://127.0.0.1/x", Context: "bmctest:bad"})
		if err == nil || bmc.IsTransient(err) {
			tc.Errorf("Subscribe with an ftp Destination: %v; want a permanent error", err)
		}
		if m := len(peer.Subscriptions()); m != n {
			tc.Errorf("a refused Subscribe changed the peer's subscriptions: %d, then %d", n, m)
		}
	})
	s.run(t, path, "List", func(tc *tcase) {
		sub, _ := tc.subscriber()
		var ids []string
		for _, owner := range []string{"bmctest:list-a", "bmctest:list-b"} {
			dest := "http://127.0.0.1:9/bmctest-events/" + strings.TrimPrefix(owner, "bmctest:") + "/Zq7tokenList"
			got, err := sub.Subscribe(tc.ctx(), bmc.EventSubscriptionSpec{Destination: dest, Context: owner})
			tc.noDestination("Subscribe", err, dest)
			tc.noErr("Subscribe "+owner, err)
			ids = append(ids, got.ID)
			tc.wantListed(sub, got.ID, owner)
		}
		if ids[0] == ids[1] {
			tc.Errorf("two subscriptions share the ID %q", ids[0])
		}
	})
	s.run(t, path, "Unsubscribe", func(tc *tcase) {
		sub, peer := tc.subscriber()
		dest := "http://127.0.0.1:9/bmctest-events/src/Zq7tokenUnsubscribe"
		got, err := sub.Subscribe(tc.ctx(), bmc.EventSubscriptionSpec{Destination: dest, Context: "bmctest:unsubscribe"})
		tc.noErr("Subscribe", err)
		tc.noErr("Unsubscribe", sub.Unsubscribe(tc.ctx(), got.ID))
		list, err := sub.EventSubscriptions(tc.ctx())
		tc.noErr("EventSubscriptions", err)
		if slices.ContainsFunc(list, func(s bmc.EventSubscription) bool { return s.ID == got.ID }) {
			tc.Errorf("EventSubscriptions still lists %s after Unsubscribe", got)
		}
		if slices.ContainsFunc(peer.Subscriptions(), func(s bmc.EventSubscription) bool { return s.ID == got.ID }) {
			tc.Errorf("the peer still holds %s after Unsubscribe", got)
		}
		err = sub.Unsubscribe(tc.ctx(), got.ID)
		tc.noDestination("Unsubscribe again", err, dest)
		tc.noErr("Unsubscribe of a subscription already gone (must be idempotent)", err)
	})
	s.run(t, path, "TestEvent", func(tc *tcase) {
		sub, peer := tc.subscriber()
		dest := "http://127.0.0.1:9/bmctest-events/src/Zq7tokenTestEvent"
		got := make(chan []byte, 16)
		if peer.Delivers {
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				select {
				case got <- b:
				default:
				}
			}))
			tc.Cleanup(rcv.Close)
			dest = rcv.URL + "/bmctest-events/src/Zq7tokenTestEvent"
		}
		_, err := sub.Subscribe(tc.ctx(), bmc.EventSubscriptionSpec{Destination: dest, Context: "bmctest:test-event"})
		tc.noErr("Subscribe", err)
		before := 0
		if peer.TestEvents != nil {
			before = peer.TestEvents()
		}
		err = sub.SubmitTestEvent(tc.ctx(), bmc.TestEvent{EventID: "bmctest-1", Message: "bmctest test event", Severity: bmc.SeverityOK})
		tc.noDestination("SubmitTestEvent", err, dest)
		if errors.Is(err, bmc.ErrNotSupported) {
			tc.requireOpError("SubmitTestEvent", err)
			tc.Skipf("the peer does not offer SubmitTestEvent: %v", err)
		}
		tc.noErr("SubmitTestEvent", err)
		if peer.TestEvents != nil {
			if n := peer.TestEvents(); n != before+1 {
				tc.Errorf("the peer counts %d test events after SubmitTestEvent, want %d", n, before+1)
			}
		}
		if !peer.Delivers {
			return
		}
		select {
		case b := <-got:
			var ev struct {
				Events []json.RawMessage
			}
			if err := json.Unmarshal(b, &ev); err != nil || len(ev.Events) == 0 {
				tc.Errorf("the test event delivered is not a Redfish Event with records: %.200q", b)
			}
		case <-time.After(tc.opts.SettleTimeout):
			tc.Errorf("no test event reached the Destination within %s", tc.opts.SettleTimeout)
		}
	})
}

// subscriber returns the driver as a bmc.EventSubscriber and the peer, or
// skips.
func (tc *tcase) subscriber() (bmc.EventSubscriber, *EventPeer) {
	tc.Helper()
	sub, ok := tc.drv.(bmc.EventSubscriber)
	if !ok {
		tc.Skipf("%T does not implement bmc.EventSubscriber", tc.drv)
	}
	if tc.target.Events == nil || tc.target.Events.Subscriptions == nil {
		tc.Skip("Target.Events is not set: the peer is not known to offer event subscriptions")
	}
	return sub, tc.target.Events
}

// wantListed fails unless EventSubscriptions lists id with the context.
func (tc *tcase) wantListed(sub bmc.EventSubscriber, id, context string) {
	tc.Helper()
	list, err := sub.EventSubscriptions(tc.ctx())
	tc.noErr("EventSubscriptions", err)
	for _, s := range list {
		if s.ID == id {
			if s.Context != context {
				tc.Errorf("EventSubscriptions lists %s; want Context %q", s, context)
			}
			return
		}
	}
	tc.Errorf("EventSubscriptions does not list the subscription %q just created (%d listed)", id, len(list))
}

// noDestination fails when err's text contains the Destination (a
// credential) or its token.
func (tc *tcase) noDestination(what string, err error, dest string) {
	tc.Helper()
	if err == nil {
		return
	}
	tok := dest[strings.LastIndexByte(dest, '/')+1:]
	for _, form := range []string{err.Error(), fmt.Sprintf("%+v", err)} {
		if strings.Contains(form, dest) || strings.Contains(form, tok) {
			tc.Errorf("%s: the error leaks the subscription's Destination", what)
			return
		}
	}
}
