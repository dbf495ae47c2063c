package jobtest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/task"
)

// Replicas runs three live job.Runners on store and fails t unless every
// job runs exactly once (no task sent twice), no BMC ever has two sessions at
// once, and jobs on one system run one after another (no interleaving), in
// submission order, whichever replica they were submitted through. It uses
// fake BMCs. Run it on your own storage.Store to check that it can carry
// several replicas; bmckit runs it on memstore and PostgreSQL.
func Replicas(t testing.TB, store storage.Store) {
	t.Helper()
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
	// Every state-changing call, per BMC, tagged with its job.
	var mu sync.Mutex
	calls := make([][]string, nBMC)
	for i, b := range bmcs {
		for _, m := range []fake.Method{fake.MethodSetPower, fake.MethodSetBootOverride} {
			b.SetHook(m, func(ctx context.Context, c fake.Call) error {
				call, _ := job.CallFromContext(ctx)
				mu.Lock()
				calls[i] = append(calls[i], call.Job)
				mu.Unlock()
				return nil
			})
		}
	}
	var runners []*job.Runner
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 3)
	for i := 0; i < 3; i++ {
		r, err := job.NewRunner(job.Config{
			Store: store, StepperConfig: job.StepperConfig{
				Dialer:       fleet,
				Credentials:  bmc.StaticCredentials{"lab": {Username: "admin", Password: "replicas-Pw-4417"}},
				PollInterval: time.Millisecond,
			}, Workers: 4,
			Owner: fmt.Sprintf("replica-%d", i), ScanInterval: 10 * time.Millisecond,
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
		_, err := runners[i%3].Submit(context.Background(), fmt.Sprintf("rep-%02d", i), replicaNetboot(urls[i%nBMC]))
		require.NoError(t, err)
	}
	for i := 0; i < nJobs; i++ {
		j := Wait(t, runners[(i+1)%3], fmt.Sprintf("rep-%02d", i), time.Minute)
		AssertCompleted(t, j, conditions.ResultSucceeded)
		for k, ts := range j.Status.Tasks {
			assert.Equal(t, 1, ts.Attempts, "job %s task %d ran once", j.Name, k)
		}
	}
	mu.Lock()
	for i := range bmcs {
		assert.Equal(t, 0, Interleavings(calls[i]), "BMC %d: calls %v", i, calls[i])
		var order []string // jobs in the order they first acted
		for _, c := range calls[i] {
			if len(order) == 0 || order[len(order)-1] != c {
				order = append(order, c)
			}
		}
		var want []string // submission order
		for k := i; k < nJobs; k += nBMC {
			want = append(want, fmt.Sprintf("rep-%02d", k))
		}
		assert.Equal(t, want, order, "BMC %d: jobs ran in submission order", i)
	}
	mu.Unlock()
	for i, b := range bmcs {
		s := b.Sessions()
		assert.Equal(t, 1, s.MaxOpen, "BMC %d: never two sessions at once", i)
		assert.Equal(t, nJobs/nBMC, s.Logins, "BMC %d: one session per job", i)
		assert.Len(t, b.CallsTo(fake.MethodSetBootOverride), nJobs/nBMC, "BMC %d: each job's boot task sent once", i)
	}
	// Locks are released right after a job's last write, so poll for that.
	deadline := time.Now().Add(10 * time.Second)
	for {
		locks, err := store.List(context.Background(), "bmckit/systems/")
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

func replicaNetboot(url string) job.Spec {
	return job.Spec{BMC: url, CredentialsRef: "lab", Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
}
