package monitor_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
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

// putEvent stores ev as a receiver would (one record under its source).
func putEvent(t *testing.T, s storage.Store, name string, ev bmcevents.Event) {
	t.Helper()
	if ev.Received.IsZero() {
		ev.Received = monitortest.T0
	}
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	_, err = s.Create(context.Background(), bmcevents.Prefix+ev.Source+"/"+name, b)
	require.NoError(t, err)
}

// criticalLog collects Observer.CriticalEvent calls.
type criticalLog struct {
	mu  sync.Mutex
	evs []monitor.CriticalEvent
}

func (c *criticalLog) observer() monitor.Observer {
	return monitor.Observer{CriticalEvent: func(e monitor.CriticalEvent) {
		c.mu.Lock()
		c.evs = append(c.evs, e)
		c.mu.Unlock()
	}}
}

func (c *criticalLog) systems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.evs {
		out = append(out, e.System)
	}
	return out
}

func critical(t *testing.T, s storage.Store, m *monitor.Monitor, url string) *conditions.Condition {
	t.Helper()
	return conditions.Get(monitortest.Record(t, s, m, url).Status.Conditions, monitor.TypeCriticalBMCEvent)
}

// A critical event reaches the records of its BMC's machines: only the
// named system's when it names one, every one of the BMC's when it names
// none; never another BMC's; a non-critical event or an event of a BMC
// nobody monitors sets nothing.
func TestCriticalEventsReachTheRightMachines(t *testing.T) {
	s := memstore.New()
	obs := &criticalLog{}
	e := newFakeEnv(t, monitor.Config{Store: s, Events: bmcevents.NewFollower(s), Observer: obs.observer(), InventoryInterval: -1})
	const sys2, other = "redfish://10.0.0.1/redfish/v1/Systems/2", "redfish://10.0.0.9/redfish/v1/Systems/2"
	for _, u := range []string{sys2, other} {
		_, err := e.fleet.AddNew(u, fake.Options{Power: bmc.PowerOn, Clock: e.clk})
		require.NoError(t, err)
	}
	for _, u := range []string{fakeURL, sys2, other} {
		_, err := e.m.Add(context.Background(), u, "rack1")
		require.NoError(t, err)
	}
	monitortest.Settle(t, e.clk, e.m)
	const src = "10.0.0.1_443"

	putEvent(t, s, "a", bmcevents.Event{Source: src, ID: "a", Severity: bmc.SeverityCritical, MessageID: "Drive.1.0.Failed",
		Message: "Drive 0 failed", Origin: "/redfish/v1/Systems/2/Storage/1/Drives/0", System: "2"})
	putEvent(t, s, "b", bmcevents.Event{Source: src, ID: "b", Severity: bmc.SeverityWarning, Message: "Fan slow"})
	putEvent(t, s, "c", bmcevents.Event{Source: "10.0.0.77_443", ID: "c", Severity: bmc.SeverityCritical, Message: "not ours"})
	monitortest.Advance(t, e.clk, time.Second, time.Second, e.m)

	assert.Nil(t, critical(t, s, e.m, fakeURL), "system 1 is not named")
	c := critical(t, s, e.m, sys2)
	require.NotNil(t, c)
	assert.Equal(t, conditions.True, c.Status)
	assert.Contains(t, c.Message, "Drive 0 failed")
	assert.Contains(t, c.Message, "system 2")
	assert.Nil(t, critical(t, s, e.m, other), "another BMC's system 2")
	assert.Equal(t, []string{"10.0.0.1:443/redfish/v1/Systems/2"}, obs.systems())

	// A chassis event (no system): every machine of the BMC.
	putEvent(t, s, "d", bmcevents.Event{Source: src, ID: "d", Severity: bmc.SeverityCritical, MessageID: "Power.1.0.PowerSupplyFailed",
		Message: "PSU 1 failed", Origin: "/redfish/v1/Chassis/1", Received: monitortest.T0.Add(time.Second)})
	monitortest.Advance(t, e.clk, time.Second, time.Second, e.m)
	for _, u := range []string{fakeURL, sys2} {
		c := critical(t, s, e.m, u)
		require.NotNil(t, c, u)
		assert.Contains(t, c.Message, "PSU 1 failed", u)
	}
	assert.Equal(t, int64(2), monitortest.Record(t, s, e.m, sys2).Status.CriticalEvents.Count)
	assert.Equal(t, int64(1), monitortest.Record(t, s, e.m, fakeURL).Status.CriticalEvents.Count)
	assert.Nil(t, critical(t, s, e.m, other))
	assert.Len(t, obs.systems(), 3)
	assert.Equal(t, int64(3), e.m.Stats().CriticalEvents)

	// Followed again (a restarted monitor's follower reports everything):
	// nothing newer, nothing written.
	monitortest.Advance(t, e.clk, 5*time.Minute, time.Second, e.m)
	assert.Equal(t, int64(3), e.m.Stats().CriticalEvents)
}

// The refresh writes its result by compare-and-swap on its claim's
// revision; when the event follower set the condition between the claim
// and the result, the result is written over the current record and the
// condition stays.
func TestCriticalEventKeptByAConcurrentRefresh(t *testing.T) {
	s := memstore.New()
	e := newFakeEnv(t, monitor.Config{Store: s, Events: bmcevents.NewFollower(s), InventoryInterval: -1})
	e.add(t)

	var armed atomic.Bool
	armed.Store(true)
	e.srv.SetHook(fake.MethodSystemStatus, func(context.Context, fake.Call) error {
		if !armed.CompareAndSwap(true, false) {
			return nil
		}
		// The refresh has claimed and is reading: an event arrives and
		// the follower writes the record under it.
		putEvent(t, s, "x", bmcevents.Event{Source: "10.0.0.1_443", ID: "x", Severity: bmc.SeverityCritical, Message: "Memory ECC uncorrectable"})
		e.clk.Advance(time.Second)
		require.Eventually(t, func() bool { return critical(t, s, e.m, fakeURL) != nil }, 20*time.Second, time.Millisecond)
		return nil
	})
	e.srv.SetPower(bmc.PowerOff) // the refresh has something to write
	monitortest.Advance(t, e.clk, 3*time.Minute, time.Second, e.m)
	require.False(t, armed.Load(), "the hook ran")

	mc := monitortest.Record(t, s, e.m, fakeURL)
	assert.Equal(t, bmc.PowerOff, mc.Status.Power, "the refresh's result was written")
	c := conditions.Get(mc.Status.Conditions, monitor.TypeCriticalBMCEvent)
	require.NotNil(t, c, "the follower's condition was kept")
	assert.Contains(t, c.Message, "Memory ECC uncorrectable")
	require.NotNil(t, mc.Status.CriticalEvents)
	assert.Equal(t, int64(1), mc.Status.CriticalEvents.Count)
}

// conflictStore makes the next Update of one key conflict: just before
// it, it writes that record itself (as a refresh would), changing its
// power state.
type conflictStore struct {
	storage.Store
	key       string
	armed     atomic.Bool
	conflicts atomic.Int64
}

func (c *conflictStore) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	if key == c.key && c.armed.CompareAndSwap(true, false) {
		rec, err := c.Store.Get(ctx, key)
		if err != nil {
			return 0, err
		}
		mc, err := monitor.Decode(rec.Value)
		if err != nil {
			return 0, err
		}
		mc.Status.Power = bmc.PowerOff
		b, _ := json.Marshal(mc)
		if _, err := c.Store.Update(ctx, key, b, rec.Revision); err != nil {
			return 0, err
		}
		c.conflicts.Add(1)
	}
	return c.Store.Update(ctx, key, value, rev)
}

// The follower's write conflicts with a concurrent write of the record:
// it is retried on the current record, and both writes stand.
func TestCriticalEventRetriedOnConflict(t *testing.T) {
	raw := memstore.New()
	cs := &conflictStore{Store: raw}
	e := newFakeEnv(t, monitor.Config{Store: cs, Events: bmcevents.NewFollower(raw), InventoryInterval: -1})
	e.add(t)
	key, err := e.m.Key(fakeURL)
	require.NoError(t, err)
	cs.key = key
	cs.armed.Store(true)

	putEvent(t, raw, "y", bmcevents.Event{Source: "10.0.0.1_443", ID: "y", Severity: bmc.SeverityCritical, Message: "Voltage critical"})
	monitortest.Advance(t, e.clk, time.Second, time.Second, e.m)
	require.Equal(t, int64(1), cs.conflicts.Load(), "the follower's first write conflicted")

	mc := monitortest.Record(t, raw, e.m, fakeURL)
	assert.Equal(t, bmc.PowerOff, mc.Status.Power, "the concurrent write stands")
	c := conditions.Get(mc.Status.Conditions, monitor.TypeCriticalBMCEvent)
	require.NotNil(t, c, "the follower's write was retried")
	assert.Contains(t, c.Message, "Voltage critical")
	assert.Equal(t, int64(1), e.m.Stats().CriticalEvents)
}

// Two replicas following one store write the condition once per new
// event batch, whoever is first, and never take it back: the record's
// condition changes as often as new critical events come, not twice as
// often.
func TestCriticalEventsTwoReplicas(t *testing.T) {
	s := memstore.New()
	obs := &criticalLog{}
	e := newFakeEnv(t, monitor.Config{Store: s, Events: bmcevents.NewFollower(s), Observer: obs.observer(), InventoryInterval: -1})
	b, err := monitor.New(monitor.Config{Store: s, Dialer: e.fleet, Credentials: e.creds, Clock: e.clk, Interval: time.Minute,
		Owner: "replica-b", Events: bmcevents.NewFollower(s), Observer: obs.observer(), InventoryInterval: -1})
	require.NoError(t, err)
	monitortest.Start(t, b)
	e.add(t)
	monitortest.Settle(t, e.clk, e.m, b)

	// Watch every revision of the record.
	key, err := e.m.Key(fakeURL)
	require.NoError(t, err)
	f := storage.NewFollower(s, key)
	_, err = f.Next(context.Background())
	require.NoError(t, err)
	var messages []string
	watch := func() {
		evs, err := f.Next(context.Background())
		require.NoError(t, err)
		for _, ev := range evs {
			mc, err := monitor.Decode(ev.Value)
			require.NoError(t, err)
			if c := conditions.Get(mc.Status.Conditions, monitor.TypeCriticalBMCEvent); c != nil &&
				(len(messages) == 0 || messages[len(messages)-1] != c.Message) {
				messages = append(messages, c.Message)
			}
		}
	}

	const src = "10.0.0.1_443"
	putEvent(t, s, "1", bmcevents.Event{Source: src, ID: "1", Severity: bmc.SeverityCritical, Message: "first", Received: monitortest.T0.Add(time.Second)})
	putEvent(t, s, "2", bmcevents.Event{Source: src, ID: "2", Severity: bmc.SeverityCritical, Message: "second", Received: monitortest.T0.Add(2 * time.Second)})
	monitortest.Advance(t, e.clk, 3*time.Second, time.Second, e.m, b)
	watch()
	putEvent(t, s, "3", bmcevents.Event{Source: src, ID: "3", Severity: bmc.SeverityCritical, Message: "third", Received: monitortest.T0.Add(3 * time.Second)})
	monitortest.Advance(t, e.clk, 5*time.Minute, time.Second, e.m, b) // refreshes by both replicas too
	watch()

	require.Len(t, messages, 2, "one change per batch of new events: %q", messages)
	assert.Contains(t, messages[0], "second")
	assert.Contains(t, messages[1], "third")
	mc := monitortest.Record(t, s, e.m, fakeURL)
	assert.Equal(t, int64(3), mc.Status.CriticalEvents.Count)
	assert.Equal(t, int64(2), e.m.Stats().CriticalEvents+b.Stats().CriticalEvents)
	assert.Len(t, obs.systems(), 2, "each change reported once")
	assert.GreaterOrEqual(t, e.m.Stats().Reads+b.Stats().Reads, int64(5), "the replicas refreshed meanwhile, keeping the condition")
}
