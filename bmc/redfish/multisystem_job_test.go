package redfish_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// runFleet runs one [power off, pxe once, power on] job on each of the
// given systems of srv through one Runner and returns the wall time until
// all completed.
func runFleet(t *testing.T, srv *redfishtest.Server, systems []string) time.Duration {
	t.Helper()
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(testOptions()))
	r, err := job.NewRunner(job.Config{
		Store: memstore.New(), StepperConfig: job.StepperConfig{
			Dialer:      &dialer,
			Credentials: bmc.StaticCredentials{"lab": srv.Credentials()},
		},

		Workers:             64,
		EndpointConcurrency: 64,
		ScanInterval:        20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	for _, id := range systems {
		spec := job.Spec{BMC: srv.Address(id), CredentialsRef: "lab", Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		}}
		if _, err := r.Submit(ctx, "netboot-"+id, spec); err != nil {
			t.Fatal(err)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	for _, id := range systems {
		j, err := r.Wait(wctx, "netboot-"+id)
		if err != nil {
			t.Fatalf("system %s: %v", id, err)
		}
		if j.Status.Result != conditions.ResultSucceeded {
			t.Fatalf("system %s: %s %s", id, j.Status.Result, j.Status.Message)
		}
	}
	return time.Since(start)
}

// Fifty systems behind one Redfish endpoint (a chassis manager, a
// multi-node service, an emulator) run in parallel on one shared session:
// the fleet takes about as long as one job, with one login for the endpoint.
// The ratio is taken in the same run; power changes take 3 s, so the jobs'
// own time dominates the CPU they cost.
func TestFiftySystemsBehindOneEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: takes about 20 s")
	}
	srv := redfishtest.NewServer(redfishtest.Config{Systems: 50, PowerDelay: 3 * time.Second})
	t.Cleanup(srv.Close)
	var all []string
	for i := 1; i <= 50; i++ {
		id := fmt.Sprint(i)
		srv.SetPower(id, "On")
		all = append(all, id)
	}
	one := runFleet(t, srv, all[:1])
	loginsOne := srv.Logins()
	for _, id := range all {
		srv.SetPower(id, "On")
	}
	fifty := runFleet(t, srv, all)
	logins := srv.Logins() - loginsOne
	t.Logf("one job %s, 50 jobs on 50 systems behind one endpoint %s (%.2fx); logins %d", one.Round(time.Millisecond), fifty.Round(time.Millisecond), float64(fifty)/float64(one), logins)
	if logins != 1 {
		t.Errorf("%d logins for 50 systems behind one endpoint; want 1 (one shared session)", logins)
	}
	// Measured 1.06x (1.36x under -race on a quiet machine; see
	// docs/benchmarks.md). The test guards the property, parallel systems,
	// with room for a loaded CI machine: run one at a time, 50 jobs take
	// 50x one job; even the old host:port lock made it 19 jobs in 240 s.
	if float64(fifty) > 2*float64(one) {
		t.Errorf("50 systems took %s, %.2fx one job (%s); want well under 2x: systems behind one endpoint must run in parallel", fifty, float64(fifty)/float64(one), one)
	}
	for _, id := range all {
		if st := srv.System(id); st.Power != "On" || st.Boots < 1 {
			t.Errorf("system %s after netboot: %+v", id, st)
		}
	}
}
