package oneshot_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/oneshot"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

func powerJob(addr string, op task.PowerOp) job.Spec {
	return job.Spec{BMC: addr, Tasks: []task.Spec{{Power: &task.PowerAction{Op: op}}}}
}

// The default dialer routes redfish:// to the Redfish driver and ipmi:// to
// the IPMI driver: a netboot on the simulated Redfish BMC (one login,
// logged out when Run returns) and a power cycle on the in-process IPMI
// simulator.
func TestRunRedfishAndIPMI(t *testing.T) {
	rf := redfishtest.NewServer(redfishtest.Config{})
	defer rf.Close()
	rf.SetPower("1", "On")
	j, err := oneshot.Run(context.Background(), jobtest.Netboot(rf.Address("1"), task.BootModeUEFI, 0), oneshot.Options{Credentials: rf.Credentials()})
	if err != nil {
		t.Fatalf("redfish netboot: %v", err)
	}
	jobtest.AssertCompleted(t, j, conditions.ResultSucceeded)
	if st := rf.System("1"); st.Power != "On" || st.Boots != 1 {
		t.Errorf("server after the netboot: %+v", st)
	}
	if rf.Logins() != 1 {
		t.Errorf("%d logins, want 1", rf.Logins())
	}

	sim := ipmitest.NewServer(t, ipmitest.Options{})
	j, err = oneshot.Run(context.Background(), powerJob(sim.Endpoint.String(), task.PowerCycle), oneshot.Options{Credentials: sim.Credentials})
	if err != nil {
		t.Fatalf("ipmi power cycle: %v", err)
	}
	jobtest.AssertCompleted(t, j, conditions.ResultSucceeded)
}

// Options.Config.Dialer replaces the drivers (a fake in a unit test), and
// the spec's CredentialsRef does not matter: Options.Credentials log in.
func TestRunWithAFakeDialer(t *testing.T) {
	fleet := fake.NewFleet()
	const addr = "redfish://10.0.0.1/redfish/v1/Systems/1"
	srv, err := fleet.AddNew(addr, fake.Options{Username: "admin", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	spec := powerJob(addr, task.PowerOn)
	spec.CredentialsRef = "rack12"
	j, err := oneshot.Run(context.Background(), spec, oneshot.Options{
		Credentials: bmc.Credentials{Username: "admin", Password: "pw"},
		Config:      job.Config{StepperConfig: job.StepperConfig{Dialer: fleet}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != oneshot.JobName || j.Status.Result != conditions.ResultSucceeded {
		t.Fatalf("job %s: %s", j.Name, j.Status.Result)
	}
	if p := srv.State().Power; p != bmc.PowerOn {
		t.Errorf("fake BMC power %s, want On", p)
	}
	if s := srv.Sessions(); s.Open != 0 {
		t.Errorf("%d sessions still open after Run returned", s.Open)
	}
}

// A failed job: a *ResultError with the job, whose message names the task.
func TestRunFailedJobIsAResultError(t *testing.T) {
	fleet := fake.NewFleet()
	const addr = "redfish://10.0.0.1/redfish/v1/Systems/1"
	if _, err := fleet.AddNew(addr, fake.Options{Username: "admin", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	j, err := oneshot.Run(context.Background(), powerJob(addr, task.PowerOff), oneshot.Options{
		Credentials: bmc.Credentials{Username: "admin", Password: "not-it"},
		Config:      job.Config{StepperConfig: job.StepperConfig{Dialer: fleet}},
	})
	var re *oneshot.ResultError
	if !errors.As(err, &re) || re.Job != j {
		t.Fatalf("error %v (%T), want a *ResultError holding the returned job", err, err)
	}
	jobtest.AssertCompleted(t, j, conditions.ResultFailed)
	if !strings.Contains(err.Error(), "job Failed (Unauthorized): task 1 (power off) failed") {
		t.Errorf("error %q", err)
	}
	if strings.Contains(err.Error(), "not-it") {
		t.Errorf("the password leaked: %q", err)
	}
}

// ctx ending first: the job as far as it got, and an error wrapping
// ctx.Err() that names the running task.
func TestRunContextEndsFirst(t *testing.T) {
	fleet := fake.NewFleet()
	const addr = "redfish://10.0.0.1/redfish/v1/Systems/1"
	if _, err := fleet.AddNew(addr, fake.Options{PowerTransition: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	j, err := oneshot.Run(ctx, powerJob(addr, task.PowerOn), oneshot.Options{
		Config: job.Config{StepperConfig: job.StepperConfig{Dialer: fleet}},
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want one wrapping context.DeadlineExceeded", err)
	}
	if !regexp.MustCompile(`task 1/1 power on was running`).MatchString(err.Error()) {
		t.Errorf("error %q does not name the running task", err)
	}
	if j == nil || conditions.IsTrue(j.Status.Conditions, conditions.TypeCompleted) {
		t.Errorf("job %+v, want the unfinished job", j)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run returned %s after its ctx ended", d)
	}
}

// What Run refuses before dialing anything.
func TestRunRefusesBeforeDialing(t *testing.T) {
	dialed := 0
	d := bmc.DialerFunc(func(context.Context, bmc.Endpoint, bmc.Credentials) (bmc.Driver, error) {
		dialed++
		return nil, errors.New("dialed")
	})
	opts := oneshot.Options{Config: job.Config{StepperConfig: job.StepperConfig{Dialer: d}}}
	if _, err := oneshot.Run(context.Background(), job.Spec{BMC: "redfish://10.0.0.1"}, opts); !errors.Is(err, job.ErrInvalidSpec) {
		t.Errorf("a spec without tasks: %v, want job.ErrInvalidSpec", err)
	}
	if _, err := oneshot.Run(context.Background(), powerJob("ftp://10.0.0.1", task.PowerOn), opts); !errors.Is(err, job.ErrInvalidSpec) {
		t.Errorf("an ftp:// address: %v, want job.ErrInvalidSpec", err)
	}
	opts.Config.Store = memstore.New()
	if _, err := oneshot.Run(context.Background(), powerJob("redfish://10.0.0.1", task.PowerOn), opts); err == nil || !strings.Contains(err.Error(), "Store must be nil") {
		t.Errorf("a Store of the caller's: %v", err)
	}
	if dialed != 0 {
		t.Errorf("%d dials", dialed)
	}
}

// The README's first snippet is Example's, verbatim, so the README's
// five-line start compiles and runs (on the simulator) in CI.
func TestREADMEStart(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\t// README:begin\n(.*?)\t// README:end\n`).FindSubmatch(src)
	if m == nil {
		t.Fatal("example_test.go has no README:begin/README:end block")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(string(m[1]), "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	snippet := strings.Join(lines, "\n")
	readme, err := os.ReadFile("../README.md")
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("CI") != "true" {
		t.Skip("../README.md not found (not the repository: a module zip)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+snippet+"\n```") {
		t.Errorf("README.md has no Go block holding oneshot's Example verbatim:\n%s", snippet)
	}
}
