package job_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
)

// changeOnClaim is a store that, when the runner claims a system (creates its
// lock record), first has another writer change job name: the runner's copy
// of the job from Submit (job/internal/sched/freshjobs.go) is then stale
// when its first step starts, and the scan has not seen the change yet (a
// long ScanInterval, and the other writer is another Runner, which does not
// wake this one). It counts the compare-and-swap conflicts on job records.
type changeOnClaim struct {
	feedStore
	once      sync.Once
	change    func()
	conflicts atomic.Int64
}

func (s *changeOnClaim) Create(ctx context.Context, k string, v []byte) (int64, error) {
	if strings.Contains(k, "/systems/") || strings.HasPrefix(k, "systems/") {
		s.once.Do(s.change)
	}
	return s.Store.Create(ctx, k, v)
}

func (s *changeOnClaim) Update(ctx context.Context, k string, v []byte, rev int64) (int64, error) {
	n, err := s.Store.Update(ctx, k, v, rev)
	if errors.Is(err, storage.ErrConflict) && strings.Contains(k, "jobs/") {
		s.conflicts.Add(1)
	}
	return n, err
}

// TestRunnerFreshCopyGoneStale: a job canceled by another writer between
// its Submit and its first step, which starts from the runner's copy made at
// Submit, completes Canceled without any call to the BMC: the step's first
// write (a compare-and-swap at the copy's revision) fails, and the job is
// read back.
func TestRunnerFreshCopyGoneStale(t *testing.T) {
	e := newEnv(t, job.Config{})
	store := &changeOnClaim{feedStore: feedStore{e.store}}
	r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{
		Dialer:       e.fleet,
		Credentials:  labCreds,
		PollInterval: 2 * time.Millisecond,
	},
		ScanInterval: time.Hour})
	require.NoError(t, err)
	e.runner = r
	other, err := job.NewRunner(job.Config{Store: e.store, StepperConfig: job.StepperConfig{Dialer: e.fleet, Credentials: labCreds}})
	require.NoError(t, err)
	const url = "redfish://10.8.0.1/redfish/v1/Systems/1"
	b := e.addBMC(t, url, fake.Options{})
	store.change = func() { require.NoError(t, other.Cancel(context.Background(), "j")) }

	_, err = r.Submit(context.Background(), "j", netboot(url))
	require.NoError(t, err)
	e.start(t)
	j := wait(t, r, "j")
	assertCompleted(t, j, conditions.ResultCanceled)
	// The step started from the stale copy and its first write failed (1),
	// or, on a loaded machine, the scan read the cancel before the claim
	// took the copy, which it then forgot (0): either way nothing reached
	// the BMC. (Seen 0 in about 1 run of 100 with four runs in parallel on
	// two cores, before and after issue 39's changes alike.)
	n := store.conflicts.Load()
	assert.LessOrEqual(t, n, int64(1), "conflicts on the job record")
	t.Logf("conflicts on the job record: %d", n)
	assert.Empty(t, b.CallsTo(fake.MethodSetPower))
	assert.Empty(t, b.CallsTo(fake.MethodSetBootOverride))
}
