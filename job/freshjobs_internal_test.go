package job

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// createReturnsLate is a store whose Create of a job record returns only
// once the job has completed: the runner reads the create from the change
// feed, claims, runs and finishes the job while Submit is still waiting.
type createReturnsLate struct {
	storage.Store
	r *Runner
}

func (s *createReturnsLate) Changes(ctx context.Context, prefix string, since int64, limit int) (storage.Changes, error) {
	return s.Store.(storage.ChangeFeed).Changes(ctx, prefix, since, limit)
}

func (s *createReturnsLate) Create(ctx context.Context, k string, v []byte) (int64, error) {
	rev, err := s.Store.Create(ctx, k, v)
	if err == nil && strings.Contains(k, "jobs/") {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err = s.r.Wait(ctx, k[strings.LastIndex(k, "/")+1:])
	}
	return rev, err
}

// A job that ran to completion before its Submit returned leaves no copy
// behind: Submit keeps one only while the scan has not read the job's
// create (freshjobs.go); kept after, nothing would ever take or forget it.
func TestFreshCopyNotKeptOnceScanned(t *testing.T) {
	const url = "redfish://10.7.0.1/redfish/v1/Systems/1"
	fleet := fake.NewFleet()
	if _, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOn}); err != nil {
		t.Fatal(err)
	}
	store := &createReturnsLate{Store: memstore.New()}
	r, err := NewRunner(Config{Store: store, StepperConfig: StepperConfig{Dialer: fleet, PollInterval: time.Millisecond}, ScanInterval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	store.r = r
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()

	if _, err := r.Submit(ctx, "j", Spec{BMC: url, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}}}); err != nil {
		t.Fatal(err)
	}
	j, err := r.Get(ctx, "j")
	if err != nil || !j.Completed() {
		t.Fatalf("job not completed when Submit returned: %v", err)
	}
	r.fresh.mu.Lock()
	n := len(r.fresh.jobs)
	r.fresh.mu.Unlock()
	if n != 0 {
		t.Errorf("%d copies kept for jobs that already ran", n)
	}
}
