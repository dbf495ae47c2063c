package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
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

// lockDeletesLost acknowledges the deletes of system locks without making
// them, as a runner that died between a job's completion write and its
// lock's delete leaves the lock behind.
type lockDeletesLost struct{ feedStore }

func (s lockDeletesLost) Delete(ctx context.Context, k string, rev int64) error {
	if strings.Contains(k, "/systems/") {
		return nil
	}
	return s.Store.Delete(ctx, k, rev)
}

// lockOwners returns the Owner of every lock record, by holder.
func lockOwners(t *testing.T, s storage.Store) map[string]string {
	t.Helper()
	recs, err := s.List(context.Background(), "bmckit/systems/")
	require.NoError(t, err)
	out := map[string]string{}
	for _, rec := range recs {
		var l struct{ Holder, Owner string }
		require.NoError(t, json.Unmarshal(rec.Value, &l))
		out[l.Holder] = l.Owner
	}
	return out
}

// runJobs runs one power-on job per url through a Runner with owner over
// store until they completed, then stops it.
func runJobs(t *testing.T, store storage.Store, fleet *fake.Fleet, owner string, names, urls []string) {
	t.Helper()
	ctx := context.Background()
	r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fleet}, Owner: owner})
	require.NoError(t, err)
	for i, u := range urls {
		_, err := r.Submit(ctx, names[i], job.Spec{BMC: u, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
		require.NoError(t, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Start(rctx) }()
	for _, n := range names {
		j, err := r.Wait(ctx, n)
		require.NoError(t, err)
		require.Equal(t, "Succeeded", string(j.Status.Result), n)
	}
	cancel()
	require.NoError(t, <-done)
}

// A runner restarted with the same Owner deletes the locks it left behind
// for completed jobs (here: deletes lost as in a crash right before them),
// and leaves another Owner's alone.
func TestRestartDeletesOwnStaleLocks(t *testing.T) {
	mem := memstore.New()
	lossy := lockDeletesLost{feedStore{mem}}
	fleet := fake.NewFleet()
	urls := make([]string, 4)
	for i := range urls {
		urls[i] = fmt.Sprintf("redfish://10.46.0.%d/redfish/v1/Systems/1", i+1)
		_, err := fleet.AddNew(urls[i], fake.Options{Power: bmc.PowerOff})
		require.NoError(t, err)
	}
	runJobs(t, lossy, fleet, "runner-a", []string{"a1", "a2", "a3"}, urls[:3])
	runJobs(t, lossy, fleet, "runner-b", []string{"b1"}, urls[3:])
	require.Equal(t, map[string]string{"a1": "runner-a", "a2": "runner-a", "a3": "runner-a", "b1": "runner-b"}, lockOwners(t, mem),
		"the lost deletes left every lock behind")

	// runner-a again, on the store as it is, with nothing to run.
	r, err := job.NewRunner(job.Config{Store: mem, StepperConfig: job.StepperConfig{Dialer: fleet}, Owner: "runner-a"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	eventually(t, "runner-a's stale locks to be deleted", func() bool { return len(lockOwners(t, mem)) == 1 })
	cancel()
	require.NoError(t, <-done) // Start waits for the sweep
	assert.Equal(t, map[string]string{"b1": "runner-b"}, lockOwners(t, mem), "another Owner's lock is not this runner's to judge")
}

// lockWritesFailing fails every write of a system lock once fail is set, as
// the store of a runner that is dying; it counts the lock deletes it let
// through, attempts rather than acknowledged ones: a sweep's delete of the
// unfinished job's lock may lose to the resume's claim, and must still fail
// the test.
type lockWritesFailing struct {
	feedStore
	fail    *atomic.Bool
	deletes *atomic.Int64
}

func (s lockWritesFailing) Update(ctx context.Context, k string, v []byte, rev int64) (int64, error) {
	if strings.Contains(k, "/systems/") && s.fail.Load() {
		return 0, errDown
	}
	return s.Store.Update(ctx, k, v, rev)
}

func (s lockWritesFailing) Delete(ctx context.Context, k string, rev int64) error {
	if strings.Contains(k, "/systems/") {
		if s.fail.Load() {
			return errDown
		}
		s.deletes.Add(1)
	}
	return s.Store.Delete(ctx, k, rev)
}

// The lock of an unfinished job stays through the sweep, even when it names
// this runner's Owner (its release failed at the last stop): the job is
// resumed first under it.
func TestRestartKeepsLocksOfUnfinishedJobs(t *testing.T) {
	mem := memstore.New()
	fleet := fake.NewFleet()
	url := "redfish://10.46.1.1/redfish/v1/Systems/1"
	srv, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOff, PowerTransition: 1 << 62})
	require.NoError(t, err)
	failing := lockWritesFailing{feedStore: feedStore{mem}, fail: new(atomic.Bool), deletes: new(atomic.Int64)}
	// A short lease: the stop gives up releasing the lock after it.
	r, err := job.NewRunner(job.Config{Store: failing, StepperConfig: job.StepperConfig{Dialer: fleet}, Owner: "runner-a", LeaseDuration: 300 * time.Millisecond})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = r.Submit(ctx, "slow", job.Spec{BMC: url, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Start(rctx) }()
	eventually(t, "the power-on to be sent", func() bool { return srv.State().PendingPower == bmc.PowerOn })
	failing.fail.Store(true)
	cancel()
	<-done
	require.Equal(t, map[string]string{"slow": "runner-a"}, lockOwners(t, mem), "the failed release left runner-a's lock")

	failing.fail.Store(false)
	r2, err := job.NewRunner(job.Config{Store: failing, StepperConfig: job.StepperConfig{Dialer: fleet}, Owner: "runner-a"})
	require.NoError(t, err)
	rctx, cancel = context.WithCancel(ctx)
	go func() { done <- r2.Start(rctx) }()
	eventually(t, "the job to be resumed (a second login to its BMC)", func() bool { return srv.Sessions().Logins == 2 })
	cancel()
	require.NoError(t, <-done) // Start waits for the sweep
	assert.Zero(t, failing.deletes.Load(), "the unfinished job's lock was deleted")
	assert.Equal(t, map[string]string{"slow": ""}, lockOwners(t, mem), "the clean stop keeps the unfinished job as holder")
}
