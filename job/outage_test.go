package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// outageStore fails every call while down, as a database that restarts
// (or, from outside, the store of a runner that died).
type outageStore struct {
	storage.Store
	down atomic.Bool
}

var errDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (s *outageStore) Get(ctx context.Context, k string) (storage.Record, error) {
	if s.down.Load() {
		return storage.Record{}, errDown
	}
	return s.Store.Get(ctx, k)
}

func (s *outageStore) Create(ctx context.Context, k string, v []byte) (int64, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.Store.Create(ctx, k, v)
}

func (s *outageStore) Update(ctx context.Context, k string, v []byte, rev int64) (int64, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.Store.Update(ctx, k, v, rev)
}

func (s *outageStore) Delete(ctx context.Context, k string, rev int64) error {
	if s.down.Load() {
		return errDown
	}
	return s.Store.Delete(ctx, k, rev)
}

func (s *outageStore) List(ctx context.Context, p string) ([]storage.Record, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.List(ctx, p)
}

// A store outage longer than the lease pauses the job instead of ending it:
// no BMC call goes out once the lease may have lapsed, and when the store
// is back the runner renews its own lease (nobody took it) and finishes the
// job, without re-running finished tasks.
func TestStoreOutagePausesTheJobAndResumes(t *testing.T) {
	// The fence comes a sixth of the lease (200 ms) before the lease may
	// lapse: room for a loaded machine to schedule the runner late.
	const lease = 1200 * time.Millisecond
	store := &outageStore{Store: memstore.New()}
	fleet := fake.NewFleet()
	url := "redfish://10.4.0.1/redfish/v1/Systems/1"
	// The power-on lands two seconds after it was requested: during the
	// outage. The job polls for it throughout.
	b, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOff, PowerTransition: 2 * time.Second})
	require.NoError(t, err)
	// The hook runs before the fake's fence check (bmc.Admit), and the
	// fence, once lapsed, admits nothing until a renewal, which the outage
	// rules out: a call the fence refuses at the hook is not sent before the
	// store is back. So only the calls it admits there count, and how late
	// a loaded machine runs the hook after the runner decided to poll does
	// not matter.
	type call struct {
		at       time.Time
		admitted bool
	}
	var mu sync.Mutex
	var calls []call
	inPoll := make(chan struct{}, 1)
	b.SetHook(fake.MethodPowerState, func(ctx context.Context, c fake.Call) error {
		f := bmc.FenceFrom(ctx)
		admitted := f == nil || f.Admit() == nil
		mu.Lock()
		calls = append(calls, call{at: time.Now(), admitted: admitted})
		mu.Unlock()
		select {
		case inPoll <- struct{}{}:
		default:
		}
		return nil
	})
	r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{
		Dialer:       fleet,
		Credentials:  labCreds,
		PollInterval: 5 * time.Millisecond,
	}, LeaseDuration: lease,
		ScanInterval: 10 * time.Millisecond, Owner: "only"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Start(ctx) }()

	spec := job.Spec{BMC: url, CredentialsRef: "lab", Tasks: []task.Spec{
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
	_, err = r.Submit(context.Background(), "outage", spec)
	require.NoError(t, err)
	recv(t, inPoll)
	// Wait (polling, with a deadline) until the power-on was requested, so the job is polling.
	deadline := time.Now().Add(10 * time.Second)
	for len(b.CallsTo(fake.MethodSetPower)) == 0 {
		require.False(t, time.Now().After(deadline), "power on never requested")
		time.Sleep(time.Millisecond)
	}
	down := time.Now()
	store.down.Store(true)
	// Down for three leases: far past the point where the lease may lapse.
	<-time.After(3 * lease)
	up := time.Now()
	store.down.Store(false)
	j := wait(t, r, "outage")
	assertCompleted(t, j, conditions.ResultSucceeded)
	mu.Lock()
	defer mu.Unlock()
	var during, fenced int
	var firstAfter time.Time
	for _, c := range calls {
		if c.at.After(down.Add(lease)) && c.at.Before(up) {
			if c.admitted {
				during++
			} else {
				fenced++
			}
		}
		if c.at.After(up) && c.admitted && firstAfter.IsZero() {
			firstAfter = c.at
		}
	}
	assert.Zero(t, during, "BMC calls admitted while the lease may have lapsed (%d more were fenced)", fenced)
	require.False(t, firstAfter.IsZero(), "no BMC call after the outage")
	t.Logf("outage %s; first BMC call %s after the store was back", up.Sub(down).Round(time.Millisecond), firstAfter.Sub(up).Round(time.Millisecond))
	assert.Len(t, b.CallsTo(fake.MethodSetBootOverride), 1, "the finished boot task was not re-sent")
	assert.Equal(t, 1, b.Sessions().MaxOpen)
}

// A Runner stopped while its store is down ends within a lease however many
// system locks it holds: the releases of a stop retry until one shared
// deadline. With a deadline per release, the batches of 256 releases waited a
// lease each, one after the other (bench/fleet -crash-at found 922 locks
// taking 2 minutes). 300 jobs wait for a power change that takes an hour;
// the clock moves only while something waits on it.
func TestStopWithStoreDownEndsWithinALease(t *testing.T) {
	const n, lease = 300, 30 * time.Second
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := &releaseSpyStore{outageStore: outageStore{Store: memstore.New()}, releasing: make(chan struct{})}
	fleet := fake.NewFleet()
	bmcs := make([]*fake.BMC, n)
	ctx := context.Background()
	r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fleet, Clock: clk}, LeaseDuration: lease, ScanInterval: time.Second})
	require.NoError(t, err)
	for i := range bmcs {
		url := fmt.Sprintf("redfish://10.7.%d.%d/redfish/v1/Systems/1", i/200, i%200+1)
		bmcs[i], err = fleet.AddNew(url, fake.Options{Clock: clk, Power: bmc.PowerOff, PowerTransition: time.Hour})
		require.NoError(t, err)
		_, err = r.Submit(ctx, fmt.Sprintf("on-%03d", i), job.Spec{BMC: url, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}})
		require.NoError(t, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Start(rctx) }()
	defer cancel()
	eventually(t, "every job to send its power-on and wait for it", func() bool {
		for _, b := range bmcs {
			if b.State().PendingPower != bmc.PowerOn {
				return false
			}
		}
		return true
	})

	store.down.Store(true)
	t0 := clk.Now()
	cancel()
	// The clock stands still until the stop tries its first release: the
	// releases' shared deadline is then t0 + lease, however long the
	// machine took to get there (the steps ending, the claims coming in).
	// Moving the clock meanwhile, 100 ms per millisecond of real time,
	// turned scheduling delay into runner time a hundredfold (32.3 s was
	// seen with -race at load 10).
	select {
	case <-store.releasing:
	case <-time.After(time.Minute): // a hang detector, not a bound on speed
		t.Fatal("the stop never tried to release a lock")
	}
	for stopped := false; !stopped; {
		select {
		case <-done:
			stopped = true
		default:
			require.Less(t, clk.Now().Sub(t0), 4*lease, "the runner did not stop")
			if clk.Waiters() > 0 {
				clk.Advance(100 * time.Millisecond)
			}
			time.Sleep(time.Millisecond) // a poll interval, not a wait for state
		}
	}
	took := clk.Now().Sub(t0)
	t.Logf("stopped after %v of the runner's clock (lease %v)", took, lease)
	// The releases wait at most a second between tries; what is left of the
	// slack is the clock moving on while the last ones notice the
	// deadline. The bound guards against a second lease or a hang.
	assert.LessOrEqual(t, took, lease+lease/3, "stopping with the store down took %s of the runner's clock", took)
	assert.GreaterOrEqual(t, took, lease, "the releases gave up before the lease ran out")
}

// releaseSpyStore is an outageStore that closes releasing at the first
// release of a lock it is asked to write (a lock with no owner: a stopping
// runner's), down or not.
type releaseSpyStore struct {
	outageStore
	releasing chan struct{}
	once      sync.Once
}

func (s *releaseSpyStore) Update(ctx context.Context, k string, v []byte, rev int64) (int64, error) {
	var l struct {
		Owner string `json:"owner"`
	}
	if strings.HasPrefix(k, syslock.KeyPrefix) && json.Unmarshal(v, &l) == nil && l.Owner == "" {
		s.once.Do(func() { close(s.releasing) })
	}
	return s.outageStore.Update(ctx, k, v, rev)
}
