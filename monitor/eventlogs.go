package monitor

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmcevents"
)

// This file brings a BMC's events into the event store at the monitor's
// cadence: its push subscription (subscriptions.go) and, where the BMC
// cannot push, a poll of its logs (Config.EventLogs; docs/health-events.md,
// "BMC events in the monitor").

// EventLogPoller reads what is new in a BMC's logs into the event store.
// *bmcevents.Source implements it:
//
//	src, _ := bmcevents.NewSource(bmcevents.SourceConfig{Store: store})
//	mon, _ := monitor.New(monitor.Config{..., EventLogs: src})
type EventLogPoller interface {
	// Poll stores the entries of the BMC behind drv that are new since
	// the last Poll of source as events, and moves source's cursor. It
	// is called on the monitor's refreshes, concurrently for different
	// BMCs (never for one BMC by one replica at once), and must be
	// idempotent: an entry read again is not stored twice. An error
	// wrapping bmc.ErrNotSupported means the BMC has no logs.
	Poll(ctx context.Context, drv bmc.EventLogReader, source string) (bmcevents.PollResult, error)
}

var _ EventLogPoller = (*bmcevents.Source)(nil)

// eventsDue says whether the refresh of claim seq does the BMC's event
// work: the first refresh, then every SubscriptionEvery claims (whichever
// replica makes them).
func (m *Monitor) eventsDue(seq int64) bool {
	return (seq-1)%int64(m.cfg.SubscriptionEvery) == 0
}

// bmcEvents is a due refresh's event work for its BMC, on the session the
// power read used: Ensure the subscription (Config.Subscriptions), and
// poll the logs (Config.EventLogs) when there is no subscription to keep
// or the BMC cannot hold one.
func (m *Monitor) bmcEvents(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials, seq int64) {
	if !m.eventsDue(seq) {
		return
	}
	canPush := false
	if m.cfg.Subscriptions != nil {
		canPush = m.ensureSubscription(ctx, ep, creds)
	}
	if !canPush && m.cfg.EventLogs != nil && ctx.Err() == nil {
		m.pollEventLogs(ctx, ep, creds)
	}
}

// pollEventLogs polls the BMC's logs through Config.EventLogs, bounded by
// EventLogTimeout. A failure is logged and counted and tried again on the
// next due refresh (the poll's cursor did not move); it is not
// reachability.
func (m *Monitor) pollEventLogs(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) {
	source := eventSource(ep)
	log := m.log.WithValues("system", ep.SystemKey(), "source", source)
	pctx, cancel := context.WithTimeout(logr.NewContext(ctx, log), m.cfg.EventLogTimeout)
	defer cancel()
	var res bmcevents.PollResult
	err := m.withDriver(ctx, pctx, ep, creds, func(drv bmc.Driver) error {
		lr, ok := drv.(bmc.EventLogReader)
		if !ok {
			return fmt.Errorf("the %T driver reads no event logs: %w", drv, bmc.ErrNotSupported)
		}
		var err error
		res, err = m.cfg.EventLogs.Poll(pctx, lr, source)
		return err
	})
	switch {
	case ctx.Err() != nil:
	case err == nil:
		m.polls.Add(1)
		m.polled.Add(int64(res.Stored))
		if len(res.Gaps) > 0 {
			log.Info("BMC logs were cleared or wrapped since the last poll; events between may be lost", "logs", fmt.Sprint(res.Gaps))
		}
		if res.Stored > 0 {
			log.V(1).Info("polled the BMC's logs", "stored", res.Stored, "duplicates", res.Duplicates)
		}
	case errors.Is(err, bmc.ErrNotSupported):
		log.V(1).Info("the BMC has no event logs to poll", "error", scrub(err.Error(), creds.Password))
	default:
		m.pollFail.Add(1)
		log.Info("polling the BMC's event logs failed; will try again", "error", scrub(err.Error(), creds.Password))
	}
}
