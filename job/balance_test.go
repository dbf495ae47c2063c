package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
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
	log   *storeLog // the shared store, with the history of its writes
	fleet *fake.Fleet
	urls  []string

	mu       sync.Mutex
	progress map[string]time.Time // per BMC address: the last job write seen
}

func newBalanceEnv(t *testing.T) *balanceEnv {
	e := &balanceEnv{t: t, log: newStoreLog(len(balOwners)), fleet: fake.NewFleet(), progress: map[string]time.Time{}}
	for i := range balSystems {
		url := fmt.Sprintf("redfish://10.61.0.%d/redfish/v1/Systems/1", i+1)
		_, err := e.fleet.AddNew(url, fake.Options{Power: bmc.PowerOn, PowerTransition: 40 * time.Millisecond, CallLogSize: -1})
		require.NoError(t, err)
		e.urls = append(e.urls, url)
	}
	return e
}

// start starts a Runner named owner over store (e.log.as(owner) when nil),
// with a lease of balLease; it stops at the end of the test, or when the
// returned func is called.
func (e *balanceEnv) start(owner string, store storage.Store) (*job.Runner, func()) {
	return e.startLease(owner, store, balLease)
}

func (e *balanceEnv) startLease(owner string, store storage.Store, lease time.Duration) (*job.Runner, func()) {
	if store == nil {
		store = e.log.as(owner)
	}
	r, err := job.NewRunner(job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:       e.fleet,
			Credentials:  labCreds,
			PollInterval: 5 * time.Millisecond,
			AdaptivePoll: job.AdaptivePoll{Disabled: true},
		}, Owner: owner, LeaseDuration: lease,
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
	return heldByOwner(e.t, e.log.Store)
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
//
// The lease is ten times balLease, as in
// TestReplicasStartedTogetherClaimTheirShare, and the check is checkShares'.
func TestReplicasShareTheFleet(t *testing.T) {
	e := newBalanceEnv(t)
	a, _ := e.startLease("a", nil, 10*balLease)
	submitted := time.Now()
	e.submit(a, 40)
	e.waitHeld(30*time.Second, "the lone replica takes every system", func(n map[string]int) bool { return n["a"] == balSystems })

	e.startLease("b", nil, 10*balLease)
	e.startLease("c", nil, 10*balLease)
	n := e.waitHeld(30*time.Second, "shared among three (each 2-5)", func(n map[string]int) bool { return balanced(n, balOwners, 2, 5) })
	t.Logf("held by owner once shared: %v", n)
	// And it stays so: no replica claims beyond its share, over the next
	// 300 writes to the store (some 4 jobs per system).
	from := e.log.len()
	for deadline := time.Now().Add(30 * time.Second); e.log.len() < from+300; {
		require.False(t, time.Now().After(deadline), "%d writes in 30s after the fleet was shared", e.log.len()-from)
		time.Sleep(5 * time.Millisecond) // a poll interval, not a wait for state
	}
	checkShares(t, e.log.snapshot(), from, submitted)
}

// checkShares replays the lock history of events and asserts that in no
// state from events[from] on did a replica hold more than its share of 5.
// Two cases bend the shares on purpose, and a machine slow enough causes
// them: a replica claims a system left takeable for a lease whatever its
// share (docs/jobs.md, "Nobody left waiting"), and one that counted a
// starved replica dead claims the bigger share of two. So the check leaves
// out the systems that may have been taken so (lockHistory), and the states
// after a heartbeat record went a lease unrenewed (allLiveUntil), and says
// so. It also checks that no lock was taken before its lease ran out, and
// returns whether some state had every system held, 2-5 per replica.
func checkShares(t *testing.T, events []writeEvent, from int, submitted time.Time) (full bool) {
	t.Helper()
	live, why := allLiveUntil(events, time.Now())
	over := map[string]int{}
	checked, beyond := 0, 0
	lockHistory(events, submitted, func(i int, held, overdue map[string]int) {
		full = full || balanced(held, balOwners, 2, 5)
		if i < from || !events[i].after.Before(live) {
			return
		}
		checked++
		for _, o := range balOwners {
			over[o] = max(over[o], held[o]-overdue[o])
			beyond = max(beyond, overdue[o])
		}
	})
	for _, o := range balOwners {
		assert.LessOrEqual(t, over[o], 5, "most systems replica %s held at once (not counting those left takeable a lease), in %d lock writes", o, checked)
	}
	checkLeasesRespected(t, events)
	if why != "" {
		t.Logf("shares checked over %d lock writes only: %s", checked, why)
	}
	if beyond > 0 {
		t.Logf("up to %d systems of a replica may have been taken beyond its share, found takeable for a lease", beyond)
	}
	return full
}

// Three replicas that start together share the systems from their first
// claims: in no state the store goes through does one hold more than its
// share of 5, and in some state every system is held, 2-5 per replica. No
// runner takes a lock another holds before its lease ran out.
//
// The lease is ten times balLease, so that the two cases where the shares
// bend on purpose (see checkShares) take ten seconds of starvation.
func TestReplicasStartedTogetherClaimTheirShare(t *testing.T) {
	e := newBalanceEnv(t)
	var rs []*job.Runner
	for _, o := range balOwners {
		r, _ := e.startLease(o, nil, 10*balLease)
		rs = append(rs, r)
	}
	e.log.waitListedAll(t, balOwners)
	submitted := time.Now()
	e.submit(rs[0], 40)
	// Ten jobs done on every system (about a second's work), and the whole
	// fleet held at once at least once.
	for i := range balSystems {
		wait(t, rs[0], fmt.Sprintf("bal-%02d-%03d", i, 9))
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		events := e.log.snapshot()
		if checkShares(t, events, 0, submitted) || t.Failed() {
			return
		}
		require.False(t, time.Now().After(deadline), "no state of the store in %d writes had every system held, 2-5 per replica; locks now: %v", len(events), e.held())
		time.Sleep(10 * time.Millisecond) // a poll interval, not a wait for state
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
	rec, err := e.log.Get(context.Background(), "bmckit/runners/alone")
	require.NoError(t, err, "heartbeat record")
	assert.Contains(t, string(rec.Value), `"leaseMillis":1000`)
	for i := range balSystems {
		for k := range 3 {
			j := wait(t, r, fmt.Sprintf("bal-%02d-%03d", i, k))
			assert.True(t, j.Completed())
		}
	}
	stop()
	_, err = e.log.Get(context.Background(), "bmckit/runners/alone")
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
// ceil(12/2) + 1 = 7 each). The dying replica's lease is three times the
// others': its locks outlast the others' jobs by far, however slowly the
// machine runs them.
func TestDeadReplicaSystemsTakenAfterLease(t *testing.T) {
	const aLease = 3 * balLease
	e := newBalanceEnv(t)
	dying := &dyingStore{outageStore{Store: e.log.as("a")}}
	a, _ := e.startLease("a", dying, aLease)
	// The store comes back for a before it stops, so its stop need not wait
	// out the outage: the test is over by then.
	t.Cleanup(func() { dying.down.Store(false) })
	e.start("b", nil)
	e.start("c", nil)
	e.log.waitListedAll(t, balOwners)
	e.submit(a, 60)
	e.waitHeld(30*time.Second, "shared among three", func(n map[string]int) bool { return balanced(n, balOwners, 2, 5) })

	dying.down.Store(true)
	died := time.Now()
	death := e.log.len() // the writes from here on committed after a died

	n := e.waitHeld(30*time.Second, "b and c share every system after a's lease", func(n map[string]int) bool {
		return n["a"] == 0 && balanced(n, []string{"b", "c"}, 5, 7)
	})
	events := e.log.snapshot()

	// Runner a's systems at its death: those whose lock it wrote last,
	// holding it (a write in flight when it died counts, too).
	lastA := map[string]int{}
	for i, ev := range events {
		if ev.by == "a" && strings.HasPrefix(ev.key, syslock.KeyPrefix) {
			lastA[ev.key] = i
		}
	}
	ofA := map[int]bool{} // system index
	taken := len(events)  // the first write by b or c on one of a's locks
	for key, i := range lastA {
		if ev := events[i]; ev.deleted || ev.owner != "a" {
			continue
		}
		next := slices.IndexFunc(events[i+1:], func(ev writeEvent) bool { return ev.key == key })
		require.GreaterOrEqual(t, next, 0, "no write on a's lock %s after a's last, yet the store shows none held by a", key)
		if i+1+next < death {
			continue // taken while a ran, its renewals starved a lease: not a's at its death
		}
		ofA[balSystemOf(t, events[i].holder)] = true
		assert.Equal(t, aLease, events[i].lease, "lease of a's lock %s", key)
		taken = min(taken, i+1+next)
	}
	require.NotEmpty(t, ofA)
	// Nobody took a lock before its lease ran out: a's after a's lease,
	// counted from a's last write.
	checkLeasesRespected(t, events)
	t.Logf("a held %d systems; b and c held %v; the first of a's was taken %v after a died (a's lease %v)",
		len(ofA), n, events[taken].after.Sub(died).Round(time.Millisecond), aLease)

	// While a's locks were still a's, b and c kept their own systems busy:
	// each wrote a job of every other system between a's death and the
	// first takeover.
	moved := map[int]bool{}
	var slowest time.Duration
	for _, ev := range events[death:taken] {
		name, ok := strings.CutPrefix(ev.key, "bmckit/jobs/")
		if ok && !ev.deleted && ev.by != "a" && !moved[balSystemOf(t, name)] {
			moved[balSystemOf(t, name)] = true
			slowest = max(slowest, ev.after.Sub(died))
		}
	}
	t.Logf("the last of b's and c's systems had its first job write after a's death %v after it", slowest.Round(time.Millisecond))
	for i, url := range e.urls {
		if !ofA[i] {
			assert.True(t, moved[i], "no job write on %s (b's or c's) between a's death and the first takeover", url)
		}
	}

	// Every system makes progress again.
	mark := time.Now()
	deadline := mark.Add(30 * time.Second)
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

// balSystemOf is the index in balanceEnv.urls of the system that submit
// gave job name.
func balSystemOf(t *testing.T, name string) int {
	t.Helper()
	var i, k int
	_, err := fmt.Sscanf(name, "bal-%02d-%03d", &i, &k)
	require.NoError(t, err, "job name %q", name)
	return i
}
