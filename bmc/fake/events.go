package fake

import (
	"context"
	"slices"
	"strconv"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.EventSubscriber = (*Driver)(nil)

// eventService is a fake BMC's event subscriptions; guarded by BMC.mu.
type eventService struct {
	subs   []bmc.EventSubscription // in creation order, Destination kept
	nextID int
	tests  []bmc.TestEvent
}

// EventSubscriptions implements [bmc.EventSubscriber]: the subscriptions
// the BMC holds, every owner's, in creation order.
func (d *Driver) EventSubscriptions(ctx context.Context) ([]bmc.EventSubscription, error) {
	var out []bmc.EventSubscription
	err := d.do(ctx, MethodEventSubscriptions, nil, func() error {
		out = copySubs(d.bmc.events.subs)
		return nil
	})
	return out, err
}

// Subscribe implements [bmc.EventSubscriber]: it checks spec and adds a
// subscription with the next number as its ID. The call is logged with
// the spec's Context only: a Destination and Headers may carry a
// credential.
func (d *Driver) Subscribe(ctx context.Context, spec bmc.EventSubscriptionSpec) (bmc.EventSubscription, error) {
	var out bmc.EventSubscription
	err := d.do(ctx, MethodSubscribe, []any{spec.Context}, func() error {
		if err := spec.Validate(); err != nil {
			return err
		}
		es := &d.bmc.events
		es.nextID++
		out = bmc.EventSubscription{
			ID: strconv.Itoa(es.nextID), Destination: spec.Destination, Context: spec.Context, Protocol: "Redfish",
			EventTypes: slices.Clone(spec.EventTypes), RegistryPrefixes: slices.Clone(spec.RegistryPrefixes),
		}
		es.subs = append(es.subs, out)
		out = copySubs([]bmc.EventSubscription{out})[0]
		return nil
	})
	return out, err
}

// Unsubscribe implements [bmc.EventSubscriber]; a subscription already
// gone is no error.
func (d *Driver) Unsubscribe(ctx context.Context, id string) error {
	return d.do(ctx, MethodUnsubscribe, []any{id}, func() error {
		es := &d.bmc.events
		es.subs = slices.DeleteFunc(es.subs, func(s bmc.EventSubscription) bool { return s.ID == id })
		return nil
	})
}

// SubmitTestEvent implements [bmc.EventSubscriber]: the BMC records the
// request ([BMC.TestEvents]); it delivers nothing.
func (d *Driver) SubmitTestEvent(ctx context.Context, ev bmc.TestEvent) error {
	return d.do(ctx, MethodSubmitTestEvent, []any{ev}, func() error {
		d.bmc.events.tests = append(d.bmc.events.tests, ev)
		return nil
	})
}

// Subscriptions returns the subscriptions the BMC holds, Destination
// included. A test hook: it logs no call.
func (b *BMC) Subscriptions() []bmc.EventSubscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	return copySubs(b.events.subs)
}

// DropSubscriptions forgets every subscription, as a BMC does after a
// reset or a firmware update. A test hook: it logs no call.
func (b *BMC) DropSubscriptions() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events.subs = nil
}

// TestEvents returns the test events asked for with SubmitTestEvent, in
// order. A test hook: it logs no call.
func (b *BMC) TestEvents() []bmc.TestEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events.tests)
}

func copySubs(in []bmc.EventSubscription) []bmc.EventSubscription {
	out := make([]bmc.EventSubscription, len(in))
	for i, s := range in {
		s.EventTypes = slices.Clone(s.EventTypes)
		s.RegistryPrefixes = slices.Clone(s.RegistryPrefixes)
		out[i] = s
	}
	return out
}
