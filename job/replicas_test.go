package job_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/pgtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
)

// Three live runners share one store: every job runs exactly once (no task
// sent twice), no BMC ever has two sessions at once, and jobs on one BMC run
// one after another.
func testReplicas(t *testing.T, store storage.Store) {
	fleet := fake.NewFleet()
	const nBMC, nJobs = 4, 16
	urls := make([]string, nBMC)
	bmcs := make([]*fake.BMC, nBMC)
	for i := range urls {
		urls[i] = fmt.Sprintf("redfish://10.3.0.%d/redfish/v1/Systems/1", i+1)
		var err error
		bmcs[i], err = fleet.AddNew(urls[i], fake.Options{Power: bmc.PowerOn, Latency: time.Millisecond})
		require.NoError(t, err)
	}
	var runners []*job.Runner
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 3)
	for i := 0; i < 3; i++ {
		r, err := job.NewRunner(job.Config{
			Store: store, Dialer: fleet, Credentials: labCreds, Workers: 4,
			Owner: fmt.Sprintf("replica-%d", i), ScanInterval: 10 * time.Millisecond, PollInterval: time.Millisecond,
		})
		require.NoError(t, err)
		runners = append(runners, r)
		go func() { done <- r.Start(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range runners {
			<-done
		}
	})
	for i := 0; i < nJobs; i++ {
		// Submitted through different replicas.
		_, err := runners[i%3].Submit(context.Background(), fmt.Sprintf("rep-%02d", i), netboot(urls[i%nBMC]))
		require.NoError(t, err)
	}
	for i := 0; i < nJobs; i++ {
		j := wait(t, runners[(i+1)%3], fmt.Sprintf("rep-%02d", i))
		assertCompleted(t, j, conditions.ResultSucceeded)
		for k, ts := range j.Status.Tasks {
			assert.Equal(t, 1, ts.Attempts, "job %s task %d ran once", j.Name, k)
		}
	}
	for i, b := range bmcs {
		s := b.Sessions()
		assert.Equal(t, 1, s.MaxOpen, "BMC %d: never two sessions at once", i)
		assert.Equal(t, nJobs/nBMC, s.Logins, "BMC %d: one session per job", i)
		assert.Len(t, b.CallsTo(fake.MethodSetBootOverride), nJobs/nBMC, "BMC %d: each job's boot task sent once", i)
	}
	// Locks are released right after a job's last write, so poll for that.
	deadline := time.Now().Add(10 * time.Second)
	for {
		locks, err := store.List(context.Background(), "bmckit/locks/")
		require.NoError(t, err)
		if len(locks) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("BMC locks still held after every job completed: %d", len(locks))
		}
		runtime.Gosched()
	}
}

func TestReplicasMemstore(t *testing.T) { testReplicas(t, memstore.New()) }

func TestReplicasPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: pgtest.Schema(t, dsn)}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	testReplicas(t, s)
}
