package monitor

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/owner"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/timestamp"
)

// DefaultInterval is the refresh interval when Config.Interval is zero.
const DefaultInterval = 3 * time.Minute

// Jitter is the fraction by which each refresh interval is varied at
// random (uniformly, up or down), so that machines added together drift
// apart and replicas take turns.
const Jitter = 0.1

// Config configures a Monitor. The zero value of every field but Store and
// one of Pool or Dialer means its default.
type Config struct {
	// Store keeps the machine records. Required. Replicas sharing a Store
	// share the work: each machine is read by one replica per interval.
	Store storage.Store
	// Pool is the connection pool to read BMCs through. Pass the job
	// Runner's (Runner.Pool) or Stepper's (Stepper.Pool): the monitor then
	// reads a system on the session a job uses, never a second one, and its
	// requests count against the same per-endpoint request budget (the
	// drivers keep it in the Dialer behind the pool). The pool's IdleTimeout
	// decides whether sessions outlive the refresh interval (see
	// docs/monitor.md). The monitor never closes a pool it was given.
	Pool *connpool.Pool
	// Dialer is used when Pool is nil: the monitor then keeps a pool of its
	// own, whose idle timeout exceeds the interval (one request per refresh
	// on Redfish), and closes it when Start returns.
	Dialer bmc.Dialer
	// Credentials resolves each machine's CredentialsRef at every read, as
	// for jobs. Defaults to a resolver that returns empty credentials for
	// an empty ref and an error otherwise.
	Credentials bmc.CredentialsResolver
	// Interval is how often each machine is read, varied by ±Jitter.
	// Defaults to DefaultInterval (3 minutes).
	Interval time.Duration
	// ReadTimeout bounds one read (credentials, connection and request).
	// Defaults to 30s.
	ReadTimeout time.Duration
	// CredentialsCheckInterval is how often the monitor resolves the
	// credentials of the machines it last read, to read at once those whose
	// credentials changed; see also [Monitor.CredentialsChanged]. Defaults
	// to 1 minute; negative disables the check.
	CredentialsCheckInterval time.Duration
	// Workers bounds the reads in flight. Defaults to 1000.
	Workers int
	// Owner names this replica in the records' claims. It must be unique
	// among the live replicas sharing the Store. When Pool is a job
	// Runner's, use that Runner's Config.Owner: a system whose lock that
	// Runner holds is then read through the shared pool, while a system a
	// job holds on another runner is skipped until it is free (so no second
	// session is opened next to a job). A replica restarted with the same
	// Owner keeps its schedule. Defaults to host-pid-random.
	Owner string
	// KeyPrefix is prepended to every key; machine records live under
	// <KeyPrefix>machines/. It must match the job Runner's KeyPrefix for the
	// lock check above. Defaults to "bmckit/".
	KeyPrefix string
	// ScanInterval is how often the Store's change feed is read for
	// records written by other replicas or processes, and how often
	// Events is followed. Defaults to 1s. Machines added through this
	// Monitor are read at once.
	ScanInterval time.Duration
	// HealthEvery is how often, in refreshes of a machine, the monitor
	// reads the full health report (bmc.HealthReader: the system, its
	// chassis and its managers; on Redfish one GET each) of a machine
	// whose power read does not carry the system's health (a driver
	// without bmc.SystemStatusReader, a BMC without Status in the system
	// resource), or of every machine with FullHealth. The first refresh
	// reads it too. Defaults to DefaultHealthEvery (10: every 30 minutes
	// at the default Interval); negative never reads it.
	HealthEvery int
	// FullHealth reads the full report every HealthEvery refreshes also
	// for machines whose power read carries the system's health, for the
	// chassis' and managers' health (fans, power supplies, the BMC). It
	// costs those requests; without it such a machine's health costs no
	// request beyond the power read. Defaults to false.
	FullHealth bool
	// InventoryInterval is how often each machine's hardware inventory
	// (bmc.InventoryReader) is read again, varied by ±Jitter, on the
	// refresh that finds it due (so at most one Interval late). The first
	// successful refresh of a machine reads it, and so does the first after
	// Add changed its address or credentials reference. It is stored
	// beside the machine record ([Monitor.Inventory]); a failed read is
	// retried after Interval, doubling up to InventoryInterval. Defaults
	// to DefaultInventoryInterval (24 hours); negative never reads it.
	InventoryInterval time.Duration
	// InventoryTimeout bounds one inventory read (many requests on
	// Redfish). Defaults to 5 minutes.
	InventoryTimeout time.Duration
	// Subscriptions, when set, keeps each machine's BMC subscribed to the
	// host's event receiver: a *bmcevents.Manager, through
	// [SubscriptionsFrom]. Every
	// SubscriptionEvery refreshes that read the BMC, the monitor calls
	// Ensure with the driver it read through and the BMC's
	// [EventSource]; [Monitor.Remove] calls Release when no other
	// monitored system shares the BMC. Defaults to none.
	Subscriptions EventSubscriptions
	// SubscriptionEvery is how often, in refreshes of a machine, Ensure
	// is called and, with EventLogs, the logs polled (1: every refresh, so
	// a BMC that dropped its subscription has it back within one
	// Interval). Of the systems behind one BMC only one does it (see
	// docs/health-events.md, "BMC events in the monitor"). Defaults to 1.
	SubscriptionEvery int
	// EventLogs, when set, polls each BMC's logs into the event store
	// where the BMC cannot push: a *bmcevents.Source (its Poll). On the
	// refreshes that call Ensure, after a power read that answered and on
	// its session, the monitor calls Poll with the BMC's [EventSource]
	// when Subscriptions is nil or its Ensure failed with an error
	// wrapping bmc.ErrNotSupported. Defaults to none.
	EventLogs EventLogPoller
	// EventLogTimeout bounds one poll of a BMC's logs (on IPMI the whole
	// SEL is read, one request per record). Defaults to 2 minutes.
	EventLogTimeout time.Duration
	// Events, when set, is followed every ScanInterval while the monitor
	// runs: a *bmcevents.Follower of the event store. Each Critical event
	// sets the CriticalBMCEvent condition ([TypeCriticalBMCEvent]) on the
	// record of each monitored machine of its BMC (only the machine of the
	// system it names, when it names one). Give each Monitor its own
	// Follower. Defaults to none.
	Events EventFollower
	// Observer receives health changes and critical BMC events set on
	// records (for metrics). Defaults to none.
	Observer Observer
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to logr.Discard().
	Logger logr.Logger
}

// Monitor keeps a durable record per machine (Contactable, power state, the
// time of the last successful read) and refreshes it on a jittered
// interval. Start runs it; Add, Remove, Get and List work without Start.
// Safe for concurrent use.
type Monitor struct {
	cfg     Config
	pool    *connpool.Pool
	ownPool bool
	prefix  string // <KeyPrefix>machines/
	log     logr.Logger
	// pending reads with the pending credentials of a rotation when the
	// current ones are refused.
	pending bmc.PendingFallback

	wake chan struct{}

	mu        sync.Mutex
	started   bool
	checkRefs map[string]bool  // CredentialsChanged since the last check
	own       map[string]int64 // key -> revision of this monitor's last write
	locks     map[string]lockSeen

	inflight atomic.Int64
	reads    atomic.Int64
	failed   atomic.Int64
	lost     atomic.Int64
	deferred atomic.Int64
	writes   atomic.Int64
	healthCh atomic.Int64
	invReads atomic.Int64
	invFail  atomic.Int64
	subsOK   atomic.Int64
	subsFail atomic.Int64
	polls    atomic.Int64
	pollFail atomic.Int64
	polled   atomic.Int64
	critical atomic.Int64
	machines atomic.Int64
	// quietAt is the clock time (UnixNano) at which the loop last went to
	// wait with nothing to do at that time; 0 while busy. Tests on a fake
	// clock wait for it before moving the clock.
	quietAt atomic.Int64
	// evQuietAt is quietAt for the event follower (Config.Events): the
	// clock time at which it last went to wait.
	evQuietAt atomic.Int64
	// pokes counts pokes; pokesSeen is pokes as of the loop's last wake-up
	// by one (for the same tests).
	pokes, pokesSeen atomic.Int64
	rngMu            sync.Mutex
	rngState         uint64
}

// lockSeen is when this monitor first saw a job lock record at a revision,
// to judge its lease by observation.
type lockSeen struct {
	rev int64
	at  time.Time
}

// New validates cfg and applies defaults.
func New(cfg Config) (*Monitor, error) {
	if cfg.Store == nil {
		return nil, errors.New("monitor: Config.Store is required")
	}
	if cfg.Pool == nil && cfg.Dialer == nil {
		return nil, errors.New("monitor: Config.Pool (a job Runner's, to share its sessions) or Config.Dialer is required")
	}
	if cfg.Credentials == nil {
		cfg.Credentials = bmc.CredentialsFunc(func(_ context.Context, ref string) (bmc.Credentials, error) {
			if ref == "" {
				return bmc.Credentials{}, nil
			}
			return bmc.Credentials{}, fmt.Errorf("no CredentialsResolver configured to resolve %q", ref)
		})
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Interval, DefaultInterval)
	def(&cfg.ReadTimeout, 30*time.Second)
	def(&cfg.ScanInterval, time.Second)
	if cfg.CredentialsCheckInterval == 0 {
		cfg.CredentialsCheckInterval = time.Minute
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1000
	}
	if cfg.HealthEvery == 0 {
		cfg.HealthEvery = DefaultHealthEvery
	}
	if cfg.InventoryInterval == 0 {
		cfg.InventoryInterval = DefaultInventoryInterval
	}
	def(&cfg.InventoryTimeout, 5*time.Minute)
	def(&cfg.EventLogTimeout, 2*time.Minute)
	if cfg.SubscriptionEvery <= 0 {
		cfg.SubscriptionEvery = 1
	}
	if cfg.Owner == "" {
		cfg.Owner = owner.Default()
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "bmckit/"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	m := &Monitor{
		cfg: cfg, pool: cfg.Pool, prefix: cfg.KeyPrefix + "machines/", log: cfg.Logger,
		wake: make(chan struct{}, 1), checkRefs: map[string]bool{}, own: map[string]int64{}, locks: map[string]lockSeen{},
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	for _, b := range seed {
		m.rngState = m.rngState<<8 | uint64(b)
	}
	if m.pool == nil {
		// Sessions outlive the interval, so a refresh is one request where
		// the protocol allows it.
		idle := 2*cfg.Interval + cfg.ReadTimeout
		m.pool, m.ownPool = connpool.New(cfg.Dialer, idle, cfg.Clock.Now), true
	}
	return m, nil
}

// Prefix is the key prefix of the machine records (<KeyPrefix>machines/),
// for hosts that follow them with a storage.Follower and [Decode].
func (m *Monitor) Prefix() string { return m.prefix }

// Follower returns a new storage.Follower of the machine records: hosts
// follow the monitor's results through the Store's change feed and decode
// each event's value with [Decode].
func (m *Monitor) Follower() *storage.Follower { return storage.NewFollower(m.cfg.Store, m.prefix) }

// Add starts monitoring the machine whose BMC is at bmcURL, reading it with
// the credentials credentialsRef names. The machine is read at once (by
// whichever replica claims it first). Adding a machine again with the same
// address and reference changes nothing; with another reference (or
// another spelling of the address), the record's Generation grows and the
// machine is read at once. Machines are identified by
// bmc.Endpoint.SystemKey, as job locks are.
func (m *Monitor) Add(ctx context.Context, bmcURL, credentialsRef string) (*Machine, error) {
	ep, err := bmc.ParseEndpoint(bmcURL)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	sys := ep.SystemKey()
	addr := ep.String()
	now := m.cfg.Clock.Now()
	var out *Machine
	_, err = storage.Modify(ctx, m.cfg.Store, recordKey(m.prefix, sys), func(cur *storage.Record) ([]byte, error) {
		if cur == nil {
			mc := &Machine{BMC: addr, System: sys, CredentialsRef: credentialsRef, Generation: 1}
			conditions.Set(&mc.Status.Conditions, conditions.Condition{
				Type: TypeContactable, Status: conditions.Unknown, Reason: ReasonPending,
				Message: ep.Redacted() + " has not been read yet", LastTransitionTime: timestamp.New(now),
			})
			out = mc
			return encode(mc)
		}
		mc, err := Decode(cur.Value)
		if err != nil {
			return nil, fmt.Errorf("monitor: machine %s: %w", sys, err)
		}
		out = mc
		if mc.BMC == addr && mc.CredentialsRef == credentialsRef {
			return nil, storage.ErrNoChange
		}
		mc.BMC, mc.CredentialsRef = addr, credentialsRef
		mc.Generation++
		mc.Refresh.Owner = "" // due at once
		return encode(mc)
	})
	if err != nil {
		return nil, fmt.Errorf("monitor: adding %s: %w", ep.Redacted(), err)
	}
	m.poke()
	return out, nil
}

// Remove stops monitoring the machine at bmcURL and deletes its record and
// its inventory. The error wraps storage.ErrNotFound when there is none.
// With Config.Subscriptions, the BMC's event subscription is then released
// unless another monitored system shares the BMC; if that fails, the
// record is gone all the same and the error says so (see
// [ErrReleaseFailed]).
func (m *Monitor) Remove(ctx context.Context, bmcURL string) error {
	ep, err := bmc.ParseEndpoint(bmcURL)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	key := recordKey(m.prefix, ep.SystemKey())
	rec, err := m.cfg.Store.Get(ctx, key)
	if err == nil {
		err = m.cfg.Store.Delete(ctx, key, 0)
	}
	if err != nil {
		return fmt.Errorf("monitor: removing %s: %w", ep.Redacted(), err)
	}
	m.poke()
	if err := m.deleteInventory(ctx, ep.SystemKey()); err != nil {
		m.log.Error(err, "deleting a removed machine's inventory failed", "system", ep.SystemKey())
	}
	if m.cfg.Subscriptions == nil {
		return nil
	}
	mc, err := Decode(rec.Value)
	if err != nil {
		return fmt.Errorf("monitor: removed %s, but its record did not decode, so its event subscription was not released: %w: %w", ep.Redacted(), ErrReleaseFailed, err)
	}
	return m.release(ctx, ep, mc.CredentialsRef)
}

// Get returns the record of the machine at bmcURL. The error wraps
// storage.ErrNotFound when the machine is not monitored.
func (m *Monitor) Get(ctx context.Context, bmcURL string) (*Machine, error) {
	ep, err := bmc.ParseEndpoint(bmcURL)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	rec, err := m.cfg.Store.Get(ctx, recordKey(m.prefix, ep.SystemKey()))
	if err != nil {
		return nil, fmt.Errorf("monitor: machine %s: %w", ep.Redacted(), err)
	}
	return Decode(rec.Value)
}

// List returns every machine record, sorted by System. Undecodable records
// are skipped (and logged).
func (m *Monitor) List(ctx context.Context) ([]*Machine, error) {
	recs, err := m.cfg.Store.List(ctx, m.prefix)
	if err != nil {
		return nil, fmt.Errorf("monitor: listing machines: %w", err)
	}
	out := make([]*Machine, 0, len(recs))
	for _, r := range recs {
		mc, err := Decode(r.Value)
		if err != nil {
			m.log.Error(err, "skipping undecodable machine record", "key", r.Key)
			continue
		}
		out = append(out, mc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].System < out[j].System })
	return out, nil
}

// CredentialsChanged tells the monitor that the credentials ref names may
// have changed (a host watching its secrets calls it): the machines using
// ref that this replica read last are checked at once, and read at once if
// the resolved credentials differ from the ones they were read with.
// Without it, the check runs every Config.CredentialsCheckInterval.
func (m *Monitor) CredentialsChanged(ref string) {
	m.mu.Lock()
	m.checkRefs[ref] = true
	m.mu.Unlock()
	m.poke()
}

// Stats counts the monitor's work since New.
type Stats struct {
	// Machines is the number of machine records the running monitor knows.
	Machines int
	// Reads counts BMC reads made (one per refresh this replica claimed),
	// Failed those that failed (Contactable False).
	Reads, Failed int64
	// ClaimsLost counts refreshes another replica claimed first.
	ClaimsLost int64
	// Deferred counts refreshes put off because a job on another runner
	// held the system.
	Deferred int64
	// Writes counts record writes (claims and results).
	Writes int64
	// HealthChanges counts changes of machines' worst health this replica
	// stored (Observer.HealthChanged).
	HealthChanges int64
	// InventoryReads counts inventory reads made (Config.InventoryInterval),
	// InventoryFailed those that failed.
	InventoryReads, InventoryFailed int64
	// SubscriptionChecks counts the Ensure calls that succeeded
	// (Config.Subscriptions), SubscriptionErrors those that failed (a BMC
	// that cannot hold a subscription is neither).
	SubscriptionChecks, SubscriptionErrors int64
	// EventPolls counts the polls of BMCs' logs that succeeded
	// (Config.EventLogs), EventPollErrors those that failed (retried on
	// the next due refresh), EventsPolled the log entries they stored as
	// events.
	EventPolls, EventPollErrors, EventsPolled int64
	// CriticalEvents counts the machine records this replica set the
	// CriticalBMCEvent condition on (Observer.CriticalEvent): once per
	// machine per batch of new critical events.
	CriticalEvents int64
	// InFlight is the number of refreshes running now.
	InFlight int
}

// Stats returns the counters.
func (m *Monitor) Stats() Stats {
	return Stats{
		Machines: int(m.machines.Load()), Reads: m.reads.Load(), Failed: m.failed.Load(),
		ClaimsLost: m.lost.Load(), Deferred: m.deferred.Load(), Writes: m.writes.Load(), HealthChanges: m.healthCh.Load(),
		InventoryReads: m.invReads.Load(), InventoryFailed: m.invFail.Load(),
		SubscriptionChecks: m.subsOK.Load(), SubscriptionErrors: m.subsFail.Load(),
		EventPolls: m.polls.Load(), EventPollErrors: m.pollFail.Load(), EventsPolled: m.polled.Load(),
		CriticalEvents: m.critical.Load(),
		InFlight:       int(m.inflight.Load()),
	}
}

func (m *Monitor) poke() {
	m.pokes.Add(1)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// rand01 returns a pseudo-random float in [0, 1) (splitmix64; jitter needs
// no cryptographic quality, and a seeded source keeps it cheap).
func (m *Monitor) rand01() float64 {
	m.rngMu.Lock()
	m.rngState += 0x9e3779b97f4a7c15
	z := m.rngState
	m.rngMu.Unlock()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// jittered is an interval varied by ±Jitter.
func (m *Monitor) jittered() time.Duration { return m.jitter(m.cfg.Interval) }

// jitter is d varied by ±Jitter.
func (m *Monitor) jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 + Jitter*(2*m.rand01()-1)))
}

// spread is a first interval in [Interval, 2*Interval): machines added (or
// first seen) together are spread over a whole interval, and still never
// read twice within one.
func (m *Monitor) spread() time.Duration {
	return m.cfg.Interval + time.Duration(float64(m.cfg.Interval)*m.rand01())
}

func (m *Monitor) setOwn(key string, rev int64) {
	m.mu.Lock()
	m.own[key] = rev
	m.mu.Unlock()
	m.writes.Add(1)
}

func (m *Monitor) isOwn(key string, rev int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.own[key] == rev
}
