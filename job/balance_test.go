package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// Claims are balanced among replicas (docs/jobs.md, "Replicas share the
// fleet"). These tests run real Runners on one memstore over fake BMCs whose
// power changes take 40 ms, so every system always has a job running and
// more queued: the systems stay claimable for the whole test.

const (
	balSystems = 12
	balLease   = time.Second
)

type balanceEnv struct {
	t     *testing.T
	store *memstore.Store
	fleet *fake.Fleet
	urls  []string

	mu       sync.Mutex
	progress map[string]time.Time // per BMC address: the last job write seen
}

func newBalanceEnv(t *testing.T) *balanceEnv {
	e := &balanceEnv{t: t, store: memstore.New(), fleet: fake.NewFleet(), progress: map[string]time.Time{}}
	for i := range balSystems {
		url := fmt.Sprintf("redfish://10.61.0.%d/redfish/v1/Systems/1", i+1)
		_, err := e.fleet.AddNew(url, fake.Options{Power: bmc.PowerOn, PowerTransition: 40 * time.Millisecond, CallLogSize: -1})
		require.NoError(t, err)
		e.urls = append(e.urls, url)
	}
	return e
}

// start starts a Runner named owner over store (e.store when nil); it stops
// at the end of the test, or when the returned func is called.
func (e *balanceEnv) start(owner string, store storage.Store) (*job.Runner, func()) {
	if store == nil {
		store = e.store
	}
	r, err := job.NewRunner(job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:       e.fleet,
			Credentials:  labCreds,
			PollInterval: 5 * time.Millisecond,
			AdaptivePoll: job.AdaptivePoll{Disabled: true},
		}, Owner: owner, LeaseDuration: balLease,
		ScanInterval: 20 * time.Millisecond,
		OnUpdate: func(j job.Job) {
			e.mu.Lock()
			e.progress[j.Spec.BMC] = time.Now()
			e.mu.Unlock()
		},
	})
	require.NoError(e.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			assert.NoError(e.t, <-done)
		})
	}
	e.t.Cleanup(stop)
	return r, stop
}

// submit queues perSystem power off/on jobs on every system through r,
// interleaved across systems.
func (e *balanceEnv) submit(r *job.Runner, perSystem int) {
	for k := range perSystem {
		for i, url := range e.urls {
			spec := job.Spec{BMC: url, CredentialsRef: "lab", Tasks: []task.Spec{
				{Power: &task.PowerAction{Op: task.PowerOff}},
				{Power: &task.PowerAction{Op: task.PowerOn}},
			}}
			_, err := r.Submit(context.Background(), fmt.Sprintf("bal-%02d-%03d", i, k), spec)
			require.NoError(e.t, err)
		}
	}
}

// held counts the system locks in the store by owner.
func (e *balanceEnv) held() map[string]int {
	return heldByOwner(e.t, e.store)
}

func heldByOwner(t *testing.T, s storage.Store) map[string]int {
	recs, err := s.List(context.Background(), "bmckit/systems/")
	require.NoError(t, err)
	n := map[string]int{}
	for _, rec := range recs {
		var l struct {
			Owner string `json:"owner"`
		}
		require.NoError(t, json.Unmarshal(rec.Value, &l))
		n[l.Owner]++
	}
	return n
}

// waitHeld samples the locks until cond holds for a sample, and fails the
// test after timeout, showing the last sample.
func (e *balanceEnv) waitHeld(timeout time.Duration, what string, cond func(map[string]int) bool) map[string]int {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := e.held()
		if cond(n) {
			return n
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not within %v; locks held by owner: %v", what, timeout, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// balanced reports whether the three owners hold every system, each at
// most share and at least min.
func balanced(n map[string]int, owners []string, lo, hi int) bool {
	total := 0
	for _, o := range owners {
		if n[o] < lo || n[o] > hi {
			return false
		}
		total += n[o]
	}
	return total == balSystems
}

var balOwners = []string{"a", "b", "c"}

// One replica that took every system while it ran alone gives systems back
// at job boundaries once two more replicas are up, until each holds at most
// its share: ceil(12/3) + 1 = 5. Without balancing, a runner hands each
// system's lock from job to job and keeps all 12 for as long as jobs are
// queued, and the other two stay idle.
func TestReplicasShareTheFleet(t *testing.T) {
	e := newBalanceEnv(t)
	a, _ := e.start("a", nil)
	e.submit(a, 40)
	e.waitHeld(5*time.Second, "the lone replica takes every system", func(n map[string]int) bool { return n["a"] == balSystems })

	e.start("b", nil)
	e.start("c", nil)
	n := e.waitHeld(10*time.Second, "shared among three (each 2-5)", func(n map[string]int) bool { return balanced(n, balOwners, 2, 5) })
	t.Logf("held by owner once shared: %v", n)
	// And it stays so: no replica claims beyond its share.
	for range 40 {
		time.Sleep(10 * time.Millisecond)
		n := e.held()
		for _, o := range balOwners {
			assert.LessOrEqual(t, n[o], 5, "replica %s over its share: %v", o, n)
		}
	}
}

// Three replicas that start together share the systems from their first
// claims: none takes more than its share of 5, at any sample.
func TestReplicasStartedTogetherClaimTheirShare(t *testing.T) {
	e := newBalanceEnv(t)
	var rs []*job.Runner
	for _, o := range balOwners {
		r, _ := e.start(o, nil)
		rs = append(rs, r)
	}
	time.Sleep(100 * time.Millisecond) // each has listed the others' heartbeats
	e.submit(rs[0], 40)
	stop := time.Now().Add(time.Second)
	over := map[string]int{}
	var full bool
	for time.Now().Before(stop) {
		n := e.held()
		for _, o := range balOwners {
			over[o] = max(over[o], n[o])
		}
		full = full || balanced(n, balOwners, 2, 5)
		time.Sleep(5 * time.Millisecond)
	}
	assert.True(t, full, "every system held, 2-5 per replica, at some sample")
	for _, o := range balOwners {
		assert.LessOrEqual(t, over[o], 5, "most systems replica %s held at once", o)
	}
}

// A Runner alone takes every claimable system at once: its share is the
// whole fleet plus the slack. Its heartbeat record is there while it runs
// and gone once Start returned.
func TestLoneRunnerTakesEverySystem(t *testing.T) {
	e := newBalanceEnv(t)
	r, stop := e.start("alone", nil)
	e.submit(r, 3)
	e.waitHeld(5*time.Second, "the lone runner holds every system at once", func(n map[string]int) bool { return n["alone"] == balSystems })
	rec, err := e.store.Get(context.Background(), "bmckit/runners/alone")
	require.NoError(t, err, "heartbeat record")
	assert.Contains(t, string(rec.Value), `"leaseMillis":1000`)
	for i := range balSystems {
		for k := range 3 {
			j := wait(t, r, fmt.Sprintf("bal-%02d-%03d", i, k))
			assert.True(t, j.Completed())
		}
	}
	stop()
	_, err = e.store.Get(context.Background(), "bmckit/runners/alone")
	assert.ErrorIs(t, err, storage.ErrNotFound, "a runner that stopped cleanly deletes its heartbeat record")
}

// dyingStore is an outageStore with its change feed (which fails while
// down, too): once down, from outside, its runner died (no renewals, no
// heartbeats), though its process goes on.
type dyingStore struct{ outageStore }

func (s *dyingStore) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	if s.down.Load() {
		return storage.Changes{}, errDown
	}
	return s.Store.(storage.ChangeFeed).Changes(ctx, prefix, since, limit)
}

// A replica that dies stalls only its own systems, for about a lease: the
// other two keep running theirs, and once the dead one's locks expired and
// its heartbeat record stopped counting (both a lease after its last
// renewal), they take its systems and share the fleet between them (at most
// ceil(12/2) + 1 = 7 each).
func TestDeadReplicaSystemsTakenAfterLease(t *testing.T) {
	e := newBalanceEnv(t)
	dying := &dyingStore{outageStore{Store: e.store}}
	a, _ := e.start("a", dying)
	e.start("b", nil)
	e.start("c", nil)
	time.Sleep(100 * time.Millisecond)
	e.submit(a, 60)
	e.waitHeld(10*time.Second, "shared among three", func(n map[string]int) bool { return balanced(n, balOwners, 2, 5) })

	// Runner a's systems, as the store says, at its death.
	recs, err := e.store.List(context.Background(), "bmckit/systems/")
	require.NoError(t, err)
	dying.down.Store(true)
	died := time.Now()
	ofA := map[string]bool{}
	for _, rec := range recs {
		var l struct{ Owner string }
		require.NoError(t, json.Unmarshal(rec.Value, &l))
		if l.Owner == "a" {
			ofA[rec.Key] = true
		}
	}
	require.NotEmpty(t, ofA)

	// Within a lease, b and c keep their own systems busy and take none of a's.
	time.Sleep(balLease * 8 / 10)
	n := e.held()
	assert.Equal(t, len(ofA), n["a"], "a's locks stay a's until their lease expired: %v", n)
	e.mu.Lock()
	moving := 0
	for url, at := range e.progress {
		if at.After(died.Add(balLease / 2)) {
			moving++
		} else {
			t.Logf("no job write on %s since %v before the death", url, died.Sub(at).Round(time.Millisecond))
		}
	}
	e.mu.Unlock()
	assert.GreaterOrEqual(t, moving, balSystems-len(ofA), "systems of b and c carry on while a's wait")

	n = e.waitHeld(5*time.Second, "b and c share every system after a's lease", func(n map[string]int) bool {
		return n["a"] == 0 && balanced(n, []string{"b", "c"}, 5, 7)
	})
	took := time.Since(died)
	t.Logf("a held %d systems; b and c held %v, %v after a died (lease %v)", len(ofA), n, took.Round(time.Millisecond), balLease)
	// The lock was last renewed up to a third of a lease before the death.
	assert.GreaterOrEqual(t, took, balLease*2/3, "a's systems taken no sooner than a lease after its last renewal")

	// Every system makes progress again.
	mark := time.Now()
	deadline := mark.Add(5 * time.Second)
	for {
		e.mu.Lock()
		var stalled []string
		for _, url := range e.urls {
			if !e.progress[url].After(mark) {
				stalled = append(stalled, url)
			}
		}
		e.mu.Unlock()
		if len(stalled) == 0 {
			break
		}
		sort.Strings(stalled)
		require.False(t, time.Now().After(deadline), "no job progress after the takeover on %v", stalled)
		time.Sleep(10 * time.Millisecond)
	}
}
