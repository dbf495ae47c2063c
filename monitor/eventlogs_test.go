package monitor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// storedEvents lists the events stored under source.
func storedEvents(t *testing.T, s storage.Store, source string) []bmcevents.Event {
	t.Helper()
	recs, err := s.List(context.Background(), bmcevents.Prefix+source+"/")
	require.NoError(t, err)
	var out []bmcevents.Event
	for _, r := range recs {
		ev, err := bmcevents.DecodeEvent(r.Value)
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

// newSource is a bmcevents.Source on s.
func newSource(t *testing.T, s storage.Store) *bmcevents.Source {
	t.Helper()
	src, err := bmcevents.NewSource(bmcevents.SourceConfig{Store: s})
	require.NoError(t, err)
	return src
}

// A BMC without subscriptions has its logs polled on every due refresh,
// through the monitor's session: every entry is stored once however many
// refreshes poll, a new entry is stored at the next one, and a critical
// entry becomes the CriticalBMCEvent condition on the machine's record,
// which the refreshes after it keep.
func TestEventLogsPolledIntoTheStore(t *testing.T) {
	s := memstore.New()
	e := newFakeEnv(t, monitor.Config{Store: s, EventLogs: newSource(t, s), Events: bmcevents.NewFollower(s), InventoryInterval: -1})
	e.add(t)
	const source = "10.0.0.1_443"

	evs := storedEvents(t, s, source)
	require.Len(t, evs, 4, "the fake's SEL (3 entries) and manager log (1)")
	for _, ev := range evs {
		assert.Equal(t, bmcevents.KindPoll, ev.Via)
		assert.Equal(t, source, ev.Source)
	}
	st := e.m.Stats()
	assert.Equal(t, int64(1), st.EventPolls)
	assert.Equal(t, int64(4), st.EventsPolled)
	assert.Equal(t, 1, e.fleet.Logins(fakeURL), "the poll used the power read's session")

	monitortest.Advance(t, e.clk, 5*time.Minute, time.Second, e.m)
	st = e.m.Stats()
	assert.Len(t, storedEvents(t, s, source), 4, "polled again, stored once")
	assert.Equal(t, st.Reads, st.EventPolls, "one poll per refresh at SubscriptionEvery 1")
	assert.Equal(t, int64(4), st.EventsPolled)
	assert.Len(t, e.srv.CallsTo(fake.MethodLogServices), int(st.Reads))

	mc := monitortest.Record(t, s, e.m, fakeURL)
	c := conditions.Get(mc.Status.Conditions, monitor.TypeCriticalBMCEvent)
	require.NotNil(t, c, "the fake's SEL holds a Critical entry")
	assert.Equal(t, conditions.True, c.Status)
	assert.Equal(t, "Critical", c.Reason)
	assert.Contains(t, c.Message, "SEL.PowerSupply.0x03")
	assert.Contains(t, c.Message, "PSU 2 input lost")
	require.NotNil(t, mc.Status.CriticalEvents)
	assert.Equal(t, int64(1), mc.Status.CriticalEvents.Count)
	assert.Equal(t, int64(1), st.CriticalEvents)
	first := c.LastTransitionTime

	// A new critical entry: stored at the next refresh, applied at the
	// next scan; the condition stays True (no transition), the count
	// grows, the message names the latest.
	e.srv.AddLogEntry(bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}, bmc.LogEntry{
		Created: monitortest.T0, Severity: bmc.SeverityCritical, Message: "CPU 1 thermal trip", MessageID: "SEL.Processor.0x01", Type: "SEL"})
	monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m)
	assert.Len(t, storedEvents(t, s, source), 5)
	mc = monitortest.Record(t, s, e.m, fakeURL)
	c = conditions.Get(mc.Status.Conditions, monitor.TypeCriticalBMCEvent)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, "CPU 1 thermal trip")
	assert.Equal(t, first, c.LastTransitionTime)
	assert.Equal(t, int64(2), mc.Status.CriticalEvents.Count)
	assert.Equal(t, int64(2), e.m.Stats().CriticalEvents)
	assert.Equal(t, monitor.ReasonContacted, monitortest.Contactable(t, mc).Reason)
}

// A log read that fails is logged (without the password) and counted,
// leaves Contactable alone, stores nothing, and is tried again on the next
// due refresh, which stores everything.
func TestEventLogPollFailureRetried(t *testing.T) {
	s := memstore.New()
	e := newFakeEnv(t, monitor.Config{Store: s, EventLogs: newSource(t, s), InventoryInterval: -1})
	e.srv.FailNext(fake.MethodLogEntries, 1, fmt.Errorf("SEL busy (login admin/%s)", monitortest.Secret))
	e.add(t)

	st := e.m.Stats()
	assert.Equal(t, int64(1), st.EventPollErrors)
	assert.Zero(t, st.EventPolls)
	assert.Empty(t, storedEvents(t, s, "10.0.0.1_443"), "the SEL is read first and failed")
	assert.Contains(t, e.logs.Text(), "polling the BMC's event logs failed")
	assert.NotContains(t, e.logs.Text(), monitortest.Secret)
	mc := monitortest.Record(t, s, e.m, fakeURL)
	assert.Equal(t, monitor.ReasonContacted, monitortest.Contactable(t, mc).Reason, "a failed poll is not reachability")

	monitortest.Advance(t, e.clk, 2*time.Minute, time.Second, e.m)
	st = e.m.Stats()
	assert.Equal(t, int64(1), st.EventPollErrors)
	assert.Positive(t, st.EventPolls)
	assert.Len(t, storedEvents(t, s, "10.0.0.1_443"), 4)
}

// Push first: a BMC whose Ensure succeeds is not polled; one whose Ensure
// says it cannot hold a subscription is; one whose Ensure failed
// otherwise is not (it can push; the subscription is retried).
func TestEventLogsOnlyWhereNoPush(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		polls bool
	}{
		{"push", nil, false},
		{"cannot push", fmt.Errorf("no EventService: %w", bmc.ErrNotSupported), true},
		{"push failed", fmt.Errorf("EventService answered 500"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New()
			subs := &countingSubs{fail: tc.err}
			e := newFakeEnv(t, monitor.Config{Store: s, Subscriptions: subs, EventLogs: newSource(t, s), InventoryInterval: -1})
			e.add(t)
			ensured, _ := subs.counts()
			assert.Len(t, ensured, 1)
			if tc.polls {
				assert.Equal(t, int64(1), e.m.Stats().EventPolls)
				assert.Len(t, storedEvents(t, s, "10.0.0.1_443"), 4)
			} else {
				assert.Zero(t, e.m.Stats().EventPolls)
				assert.Empty(t, e.srv.CallsTo(fake.MethodLogServices))
			}
		})
	}
}

// Systems behind one BMC share one source and one poll per due refresh:
// only the system with the smallest record key polls (and ensures), and
// when it stops answering another takes over.
func TestEventLogsOnePollPerBMC(t *testing.T) {
	s := memstore.New()
	subs := &countingSubs{fail: fmt.Errorf("no EventService: %w", bmc.ErrNotSupported)}
	e := newFakeEnv(t, monitor.Config{Store: s, Subscriptions: subs, EventLogs: newSource(t, s), InventoryInterval: -1})
	const second, third = "redfish://10.0.0.1/redfish/v1/Systems/2", "redfish://10.0.0.1/redfish/v1/Systems/3"
	var sys []*fake.BMC
	for _, u := range []string{second, third} {
		b, err := e.fleet.AddNew(u, fake.Options{Power: bmc.PowerOn, Clock: e.clk})
		require.NoError(t, err)
		sys = append(sys, b)
	}
	for _, u := range []string{fakeURL, second, third} {
		_, err := e.m.Add(context.Background(), u, "rack1")
		require.NoError(t, err)
	}
	monitortest.Settle(t, e.clk, e.m)
	monitortest.Advance(t, e.clk, 6*time.Minute, time.Second, e.m)

	reads1 := len(e.srv.CallsTo(fake.MethodSystemStatus))
	require.GreaterOrEqual(t, reads1, 5)
	assert.Len(t, e.srv.CallsTo(fake.MethodLogServices), reads1, "system 1 polls on each of its refreshes")
	for i, b := range sys {
		assert.NotEmpty(t, b.CallsTo(fake.MethodSystemStatus), "system %d is read", i+2)
		assert.Empty(t, b.CallsTo(fake.MethodLogServices), "system %d does not poll", i+2)
	}
	ensured, _ := subs.counts()
	assert.Len(t, ensured, reads1, "nor ensure")
	assert.Equal(t, int64(reads1), e.m.Stats().EventPolls)
	assert.Len(t, storedEvents(t, s, "10.0.0.1_443"), 4)

	// System 1 stops answering: once its record says so, system 2 does
	// the BMC's event work.
	e.srv.SetHook(fake.MethodSystemStatus, func(context.Context, fake.Call) error {
		return bmc.Transient(fmt.Errorf("system 1 is gone"))
	})
	monitortest.Advance(t, e.clk, 6*time.Minute, time.Second, e.m)
	mc := monitortest.Record(t, s, e.m, fakeURL)
	assert.Equal(t, conditions.False, monitortest.Contactable(t, mc).Status)
	assert.NotEmpty(t, sys[0].CallsTo(fake.MethodLogServices), "system 2 took over")
	assert.Empty(t, sys[1].CallsTo(fake.MethodLogServices))
	assert.False(t, strings.Contains(e.logs.Text(), monitortest.Secret))
}
