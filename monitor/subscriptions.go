package monitor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmcevents"
)

// This file keeps each BMC's event subscription at the monitor's cadence
// (Config.Subscriptions; docs/health-events.md, "Monitor").

// EventSubscriptions keeps one Redfish EventService subscription per BMC
// for the host; the monitor calls it with the driver it read the BMC
// through. Wrap a *bmcevents.Manager with [SubscriptionsFrom]:
//
//	Subscriptions: monitor.SubscriptionsFrom(mgr.Ensure, mgr.Release)
//
// (an adapter of method values, from before the monitor imported
// bmcevents; it stays so hosts' code keeps building).
type EventSubscriptions interface {
	// Ensure makes the BMC behind drv hold exactly one subscription of
	// the host, pushing to source's destination. It is called at the
	// monitor's cadence, concurrently for different BMCs, and must be
	// idempotent. An error wrapping bmc.ErrNotSupported means the BMC
	// cannot hold one.
	Ensure(ctx context.Context, drv bmc.Driver, source string) error
	// Release deletes the host's subscriptions on the BMC behind drv.
	// Idempotent.
	Release(ctx context.Context, drv bmc.Driver) error
}

// SubscriptionsFrom adapts a subscription manager's Ensure and Release
// (bmcevents.Manager's method values) to [EventSubscriptions]; their
// results other than the error are dropped (the manager logs through the
// ctx's logger, which the monitor sets).
func SubscriptionsFrom[R any](ensure func(ctx context.Context, drv bmc.Driver, source string) (R, error), release func(ctx context.Context, drv bmc.Driver) (int, error)) EventSubscriptions {
	return subscriptionFuncs[R]{ensure: ensure, release: release}
}

type subscriptionFuncs[R any] struct {
	ensure  func(context.Context, bmc.Driver, string) (R, error)
	release func(context.Context, bmc.Driver) (int, error)
}

func (f subscriptionFuncs[R]) Ensure(ctx context.Context, drv bmc.Driver, source string) error {
	_, err := f.ensure(ctx, drv, source)
	return err
}

func (f subscriptionFuncs[R]) Release(ctx context.Context, drv bmc.Driver) error {
	_, err := f.release(ctx, drv)
	return err
}

// ErrReleaseFailed is wrapped by the error of a [Monitor.Remove] that
// removed the machine but could not release its BMC's event subscription
// (Config.Subscriptions): the subscription is left on the BMC.
var ErrReleaseFailed = errors.New("releasing the BMC's event subscription failed")

// EventSource is the source name (bmcevents.ValidateSource) the monitor
// passes to Config.Subscriptions for the BMC of the system at bmcURL: its
// lower-case host and effective port (bmc.Endpoint.Key) without IPv6
// brackets, every character but letters, digits, '.' and '-' written '_'
// ("10.0.0.5:443" gives "10.0.0.5_443", "[fe80::1]:623" "fe80__1_623"), cut to 128 bytes with a hash when
// longer. Systems behind one BMC share it: events a host reads from
// bmcevents carry it as Event.Source.
func EventSource(bmcURL string) (string, error) {
	ep, err := bmc.ParseEndpoint(bmcURL)
	if err != nil {
		return "", fmt.Errorf("monitor: %w", err)
	}
	return eventSource(ep), nil
}

func eventSource(ep bmc.Endpoint) string {
	key := ep.Key()
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, strings.NewReplacer("[", "", "]", "").Replace(key))
	if strings.HasPrefix(s, ".") {
		s = "_" + s
	}
	if len(s) > bmcevents.MaxSourceLen {
		h := sha256.Sum256([]byte(key))
		s = s[:bmcevents.MaxSourceLen-17] + "-" + hex.EncodeToString(h[:8])
	}
	return s
}

// ensureSubscription calls Ensure on the session the power read used. A
// failure is logged and counted; it is not reachability (the power read
// stands) and the next due refresh tries again. It reports whether the BMC
// can push: false only when Ensure said it cannot (bmc.ErrNotSupported).
func (m *Monitor) ensureSubscription(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (canPush bool) {
	source := eventSource(ep)
	log := m.log.WithValues("system", ep.SystemKey())
	sctx, cancel := context.WithTimeout(logr.NewContext(ctx, log), m.cfg.ReadTimeout)
	defer cancel()
	err := m.withDriver(ctx, sctx, ep, creds, func(drv bmc.Driver) error {
		return m.cfg.Subscriptions.Ensure(sctx, drv, source)
	})
	switch {
	case ctx.Err() != nil:
	case err == nil:
		m.subsOK.Add(1)
	case errors.Is(err, bmc.ErrNotSupported):
		log.V(1).Info("the BMC cannot hold an event subscription", "error", scrub(err.Error(), creds.Password))
		return false
	default:
		m.subsFail.Add(1)
		log.Info("ensuring the BMC's event subscription failed; will try again", "error", scrub(err.Error(), creds.Password))
	}
	return true
}

// release releases the event subscription of ep's BMC after its machine
// was removed, unless another monitored system shares the BMC.
func (m *Monitor) release(ctx context.Context, ep bmc.Endpoint, ref string) error {
	fail := func(err error) error {
		return fmt.Errorf("monitor: removed %s: %w: %w", ep.Redacted(), ErrReleaseFailed, err)
	}
	recs, err := m.cfg.Store.List(ctx, m.prefix)
	if err != nil {
		return fail(err)
	}
	for _, r := range recs {
		mc, err := Decode(r.Value)
		if err != nil {
			continue
		}
		if other, err := bmc.ParseEndpoint(mc.BMC); err == nil && other.Key() == ep.Key() && mc.System != ep.SystemKey() {
			return nil // the BMC still serves a monitored system: its subscription stays
		}
	}
	rctx, cancel := context.WithTimeout(ctx, m.cfg.ReadTimeout)
	defer cancel()
	creds, err := m.cfg.Credentials.Resolve(rctx, ref)
	if err != nil {
		return fail(&credentialsError{ref: ref, err: err})
	}
	creds, _, err = m.pending.Try(rctx, m.cfg.Credentials, ref, creds, func(c bmc.Credentials) error {
		return m.withDriver(ctx, rctx, ep, c, func(drv bmc.Driver) error {
			return m.cfg.Subscriptions.Release(rctx, drv)
		})
	})
	if errors.Is(err, bmc.ErrNotSupported) {
		return nil
	}
	if err != nil {
		return fail(scrubbed(err, creds.Password))
	}
	m.log.V(1).Info("released the BMC's event subscriptions", "system", ep.SystemKey())
	return nil
}
