package bmcevents

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
)

// ManagerConfig configures a [Manager].
type ManagerConfig struct {
	// Owner is written into each subscription's Context and names this
	// host's subscriptions among every owner's on a BMC, e.g.
	// "bmckit:cluster-a". Required; at most 256 bytes of printable text.
	// Two hosts must not share an Owner: each deletes what it does not
	// keep of its own.
	Owner string
	// URL is the receiver's URL as BMCs reach it (the prefix the
	// Receiver is mounted at), e.g. "https://10.0.0.2:8443/bmc-events".
	// Required.
	URL string
	// Secret is the Receiver's Config.Secret. Required.
	Secret []byte
	// EventTypes and RegistryPrefixes filter what BMCs send (see
	// bmc.EventSubscriptionSpec). Default to none: every event.
	EventTypes, RegistryPrefixes []string
	// NoTestEvent skips the SubmitTestEvent after a subscription is
	// created. Defaults to false: a test event is asked for, where the
	// BMC offers it, so the receiver sees the path work end to end.
	NoTestEvent bool
	// Logger is used when ctx carries none. Defaults to logr.Discard().
	Logger logr.Logger
}

// Manager keeps exactly one subscription per BMC for its owner. It holds
// no state between calls: everything it decides is read from the BMC, so
// a host that restarts (or crashes between any two requests) converges
// on the next call. Safe for concurrent use.
type Manager struct {
	cfg ManagerConfig
}

// NewManager checks cfg and returns a Manager.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	probe := bmc.EventSubscriptionSpec{Destination: "http://127.0.0.1/", Context: cfg.Owner}
	if err := probe.Validate(); err != nil {
		return nil, fmt.Errorf("bmcevents: ManagerConfig.Owner: %w", err)
	}
	if _, err := Destination(cfg.URL, cfg.Secret, "probe"); err != nil {
		return nil, fmt.Errorf("bmcevents: ManagerConfig: %w", err)
	}
	cfg.Secret = append([]byte(nil), cfg.Secret...)
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	return &Manager{cfg: cfg}, nil
}

// EnsureResult says what [Manager.Ensure] did.
type EnsureResult struct {
	// ID is the BMC's ID of the subscription kept or created.
	ID string
	// Created reports that none was there (first call, or the BMC dropped
	// it, or its destination changed) and one was created.
	Created bool
	// Deleted counts this owner's other subscriptions deleted: leaked by
	// a crash, by a concurrent Ensure, or pointing at an old destination.
	Deleted int
	// TestEventSent reports that a test event was asked for after the
	// create and the BMC accepted it (not whether it arrived).
	TestEventSent bool
}

// Ensure makes the BMC hold exactly one subscription of this owner,
// pushing to source's destination. Call it at the host's cadence (the
// monitor's interval): one GET of the subscriptions when all is well.
//
//  1. List the BMC's subscriptions; this owner's are those whose Context
//     is Owner.
//  2. Keep the one whose Destination is source's (the lowest ID if there
//     are several; one whose BMC hides its Destination counts as source's).
//  3. None: create one (Protocol Redfish, Context Owner), then ask for a
//     test event unless NoTestEvent. A BMC at its subscription limit gets
//     this owner's other subscriptions deleted first, and the create again.
//  4. Delete this owner's others.
//
// A crash between any two steps leaves at most an extra subscription of
// this owner, which the next Ensure deletes; never a missing one for
// longer than one interval. drv must implement [bmc.EventSubscriber]
// (else an error wrapping bmc.ErrNotSupported). Errors never carry the
// destination.
func (m *Manager) Ensure(ctx context.Context, drv bmc.Driver, source string) (EnsureResult, error) {
	var res EnsureResult
	es, ok := drv.(bmc.EventSubscriber)
	if !ok {
		return res, fmt.Errorf("ensure event subscription of %s: the driver %T cannot manage subscriptions: %w", source, drv, bmc.ErrNotSupported)
	}
	dest, err := Destination(m.cfg.URL, m.cfg.Secret, source)
	if err != nil {
		return res, err
	}
	log, lerr := logr.FromContext(ctx)
	if lerr != nil {
		log = m.cfg.Logger
	}
	log = log.WithValues("source", source)
	subs, err := es.EventSubscriptions(ctx)
	if err != nil {
		return res, fmt.Errorf("ensure event subscription of %s: %w", source, err)
	}
	var keep *bmc.EventSubscription
	var others []bmc.EventSubscription
	for _, s := range m.ours(subs) {
		if keep == nil && (s.Destination == "" || sameDestination(s.Destination, dest)) {
			keep = &s
			continue
		}
		others = append(others, s)
	}
	if keep == nil {
		spec := bmc.EventSubscriptionSpec{
			Destination: dest, Context: m.cfg.Owner,
			EventTypes: m.cfg.EventTypes, RegistryPrefixes: m.cfg.RegistryPrefixes,
			RetryForever: true,
		}
		created, err := es.Subscribe(ctx, spec)
		if errors.Is(err, bmc.ErrSubscriptionLimit) && len(others) > 0 {
			log.Info("BMC at its subscription limit; deleting this owner's stale subscriptions first", "stale", len(others))
			n, derr := m.deleteAll(ctx, es, others)
			res.Deleted += n
			others = nil
			if derr != nil {
				return res, fmt.Errorf("ensure event subscription of %s: %w", source, derr)
			}
			created, err = es.Subscribe(ctx, spec)
		}
		if err != nil {
			return res, fmt.Errorf("ensure event subscription of %s: %w", source, err)
		}
		res.ID, res.Created = created.ID, true
		log.Info("created BMC event subscription", "subscription", created.ID)
		if !m.cfg.NoTestEvent {
			switch err := es.SubmitTestEvent(ctx, bmc.TestEvent{Message: "bmckit event subscription test (" + m.cfg.Owner + ")"}); {
			case err == nil:
				res.TestEventSent = true
			case errors.Is(err, bmc.ErrNotSupported):
			default:
				log.Info("the BMC refused a test event; the subscription stays", "error", err.Error())
			}
		}
	} else {
		res.ID = keep.ID
	}
	n, err := m.deleteAll(ctx, es, others)
	res.Deleted += n
	if err != nil {
		return res, fmt.Errorf("ensure event subscription of %s: %w", source, err)
	}
	if n > 0 {
		log.Info("deleted this owner's extra BMC event subscriptions", "deleted", n)
	}
	return res, nil
}

// Release deletes every subscription of this owner on the BMC (the
// machine leaves the host's care). Idempotent; it returns how many it
// deleted.
func (m *Manager) Release(ctx context.Context, drv bmc.Driver) (int, error) {
	es, ok := drv.(bmc.EventSubscriber)
	if !ok {
		return 0, fmt.Errorf("release event subscriptions: the driver %T cannot manage subscriptions: %w", drv, bmc.ErrNotSupported)
	}
	subs, err := es.EventSubscriptions(ctx)
	if err != nil {
		return 0, fmt.Errorf("release event subscriptions: %w", err)
	}
	n, err := m.deleteAll(ctx, es, m.ours(subs))
	if err != nil {
		return n, fmt.Errorf("release event subscriptions: %w", err)
	}
	return n, nil
}

// ours returns this owner's subscriptions, the lowest ID first (numeric
// IDs by number), so that concurrent callers keep the same one.
func (m *Manager) ours(subs []bmc.EventSubscription) []bmc.EventSubscription {
	var out []bmc.EventSubscription
	for _, s := range subs {
		if s.Context == m.cfg.Owner {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b bmc.EventSubscription) int {
		na, ea := strconv.ParseUint(a.ID, 10, 64)
		nb, eb := strconv.ParseUint(b.ID, 10, 64)
		if ea == nil && eb == nil {
			return cmp.Compare(na, nb)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func (m *Manager) deleteAll(ctx context.Context, es bmc.EventSubscriber, subs []bmc.EventSubscription) (int, error) {
	n := 0
	var errs []error
	for _, s := range subs {
		if err := es.Unsubscribe(ctx, s.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// sameDestination compares two URLs as a BMC may rewrite them: scheme
// and host in any case, the default port written or not, the path exact.
func sameDestination(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	norm := func(u *url.URL) string {
		host, port := strings.ToLower(u.Hostname()), u.Port()
		scheme := strings.ToLower(u.Scheme)
		if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
			port = ""
		}
		return scheme + "://" + host + ":" + port + strings.TrimSuffix(u.EscapedPath(), "/")
	}
	return norm(ua) == norm(ub)
}
