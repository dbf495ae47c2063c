// Command quickstart runs a netboot job on every server of a simulated fleet
// and prints progress and each job's final conditions and result.
//
//	go run ./examples/quickstart
//
// With no flags it starts 8 simulated Redfish BMCs in-process (HTTPS on
// 127.0.0.1, certificates verified against the simulator's CA), keeps jobs in
// an embedded durable store (storage/boltstore) in a temporary directory, and
// runs [power off, one-time PXE boot (UEFI), power on] on each server, every
// step verified by reading the BMC back. It exits 0 when every job ends
// Completed=True with result Succeeded.
//
// Flags:
//
//	-servers N         fleet size (default 8)
//	-latency D         simulated latency of every BMC call (default 20ms)
//	-power-delay D     how long a power change takes to land (default 1s)
//	-target redfish    simulated Redfish BMCs over HTTPS (default), or
//	-target fake       the in-memory fake BMC (bmc/fake), no network
//	-db PATH           boltstore file (default: a temporary file)
//	-workers N         concurrent jobs (default 16)
//
// # Running again with the same -db
//
// A run's jobs belong to the fleet it started, and every run starts a new
// simulated fleet (new ports), so the jobs an earlier run left in -db target
// BMCs that are gone. A re-run therefore replaces them: before the runner
// starts, it deletes the earlier run's jobs (netboot-01, ...; finished or,
// after an interrupted run, not), says how many, and submits its own under
// the same names. Running the same command again gives the same result and
// leaves the store holding one run's jobs. (Rejected: resuming the earlier
// jobs, which would retry BMCs that no longer exist until their timeouts;
// naming each run's jobs apart, which grows the store by a fleet per run
// for history nobody reads.)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/task"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	servers := fs.Int("servers", 8, "number of simulated servers")
	latency := fs.Duration("latency", 20*time.Millisecond, "simulated latency of every BMC call")
	powerDelay := fs.Duration("power-delay", time.Second, "how long a power change takes to land")
	target := fs.String("target", "redfish", "simulated BMCs: redfish (HTTPS on loopback) or fake (in-memory)")
	dbPath := fs.String("db", "", "boltstore file (default: a temporary file)")
	workers := fs.Int("workers", 16, "concurrent jobs")
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go run ./examples/quickstart [flags]")
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Starts a simulated fleet of Redfish BMCs on 127.0.0.1, runs [power off, one-time PXE boot")
		fmt.Fprintln(out, "(UEFI), power on] on every server through a job.Runner on an embedded bbolt store, prints")
		fmt.Fprintln(out, "progress and each job's final status, and exits 0 when all jobs succeeded.")
		fmt.Fprintln(out)
		fmt.Fprintln(out, "flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *servers < 1 || *servers > 1000 {
		return fmt.Errorf("-servers %d: want 1-1000", *servers)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// 1. The fleet.
	fleet, err := startFleet(*target, *servers, *latency, *powerDelay)
	if err != nil {
		return err
	}
	defer fleet.close()
	fmt.Fprintf(out, "started %d simulated %s BMCs (latency %s, power changes land after %s)\n", *servers, *target, *latency, *powerDelay)

	// 2. The store: the embedded durable default.
	path := *dbPath
	if path == "" {
		dir, err := os.MkdirTemp("", "bmckit-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "bmckit.db")
	}
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	fmt.Fprintf(out, "jobs are stored in %s\n", path)

	// 3. The runner.
	prog := newProgress(out)
	runner, err := job.NewRunner(job.Config{
		Store: store,
		StepperConfig: job.StepperConfig{
			Dialer:      fleet.dialer,
			Credentials: bmc.StaticCredentials{"fleet": fleet.creds},
		},

		Workers:  *workers,
		OnUpdate: prog.update,
	})
	if err != nil {
		return err
	}
	// A re-run with the same -db: replace the earlier run's jobs (see the
	// package doc), before the runner could resume them.
	if n, err := replaceEarlierRun(ctx, runner); err != nil {
		return err
	} else if n > 0 {
		fmt.Fprintf(out, "replaced %d jobs of an earlier run (their simulated BMCs are gone)\n", n)
	}
	done := make(chan error, 1)
	go func() { done <- runner.Start(ctx) }()

	// 4. One netboot job per server.
	start := time.Now()
	names := make([]string, len(fleet.addrs))
	for i, addr := range fleet.addrs {
		names[i] = fmt.Sprintf("%s%02d", jobPrefix, i+1)
		spec := job.Spec{
			BMC:            addr,
			CredentialsRef: "fleet",
			Tasks: []task.Spec{
				{Power: &task.PowerAction{Op: task.PowerOff}},
				{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
				{Power: &task.PowerAction{Op: task.PowerOn}},
			},
		}
		if _, err := runner.Submit(ctx, names[i], spec); err != nil {
			return err
		}
	}

	// 5. Wait for every job, then report.
	waitCtx, waitCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer waitCancel()
	var failed int
	var jobs []*job.Job
	for _, name := range names {
		j, err := runner.Wait(waitCtx, name)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", name, err)
		}
		jobs = append(jobs, j)
	}
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		return err
	}

	fmt.Fprintln(out)
	fmt.Fprintln(out, "final state:")
	for _, j := range jobs {
		fmt.Fprintf(out, "%s  %s  result=%s reason=%s\n", j.Name, j.Spec.BMC, j.Status.Result, j.Status.Reason)
		for _, c := range j.Status.Conditions {
			fmt.Fprintf(out, "    %-9s = %-5s  reason=%s  message=%q\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for k, ts := range j.Status.Tasks {
			fmt.Fprintf(out, "    task %d %-22s %s (attempts %d): %s\n", k+1, j.Spec.Tasks[k].Describe(), ts.Result, ts.Attempts, ts.Message)
		}
		if w := j.Status.Wire; w != nil {
			fmt.Fprintf(out, "    wire: %d requests, %d connections, %d logins\n", w.Requests, w.Connections, w.Logins)
		}
		if !conditions.IsTrue(j.Status.Conditions, conditions.TypeCompleted) || j.Status.Result != conditions.ResultSucceeded {
			failed++
		}
	}
	fmt.Fprintf(out, "\n%d of %d jobs succeeded in %s\n", len(jobs)-failed, len(jobs), elapsed.Round(time.Millisecond))
	if failed > 0 {
		return fmt.Errorf("%d jobs did not succeed", failed)
	}
	return nil
}

// jobPrefix starts the name of every job the quickstart submits.
const jobPrefix = "netboot-"

// replaceEarlierRun deletes the jobs an earlier run left in the store and
// returns how many.
func replaceEarlierRun(ctx context.Context, runner *job.Runner) (int, error) {
	jobs, err := runner.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing the jobs of earlier runs: %w", err)
	}
	n := 0
	for _, j := range jobs {
		if !strings.HasPrefix(j.Name, jobPrefix) {
			continue
		}
		if err := runner.Delete(ctx, j.Name); err != nil {
			return n, fmt.Errorf("deleting job %s of an earlier run: %w", j.Name, err)
		}
		n++
	}
	return n, nil
}

type fleet struct {
	addrs  []string
	dialer bmc.Dialer
	creds  bmc.Credentials
	close  func()
}

func startFleet(target string, n int, latency, powerDelay time.Duration) (*fleet, error) {
	switch target {
	case "fake":
		f := fake.NewFleet()
		fl := &fleet{dialer: f, creds: bmc.Credentials{Username: "admin", Password: "quickstart"}, close: func() {}}
		for i := 0; i < n; i++ {
			addr := fmt.Sprintf("redfish://10.0.%d.%d/redfish/v1/Systems/1", i/250, i%250+1)
			if _, err := f.AddNew(addr, fake.Options{Username: "admin", Password: "quickstart", Power: bmc.PowerOn, Latency: latency, PowerTransition: powerDelay}); err != nil {
				return nil, err
			}
			fl.addrs = append(fl.addrs, addr)
		}
		return fl, nil
	case "redfish":
		var srvs []*redfishtest.Server
		for i := 0; i < n; i++ {
			cfg := redfishtest.Config{PowerDelay: powerDelay}
			if latency > 0 {
				// Every request answered after the latency: the simulator's
				// "slow answer" fault applied to all requests.
				cfg.Faults = redfishtest.Faults{SlowDelay: latency, Func: func(string, string) redfishtest.Fault { return redfishtest.FaultSlow }}
			}
			srv := redfishtest.NewTLSServer(cfg)
			srv.SetPower("1", "On")
			srvs = append(srvs, srv)
		}
		fl := &fleet{creds: srvs[0].Credentials(), close: func() {
			for _, s := range srvs {
				s.Close()
			}
		}}
		for _, s := range srvs {
			fl.addrs = append(fl.addrs, s.Address("1"))
		}
		var d bmc.SchemeDialer
		d.Register("redfish", redfish.NewDialer(redfish.Options{CACertPEM: srvs[0].CACertPEM()}))
		fl.dialer = &d
		return fl, nil
	}
	return nil, fmt.Errorf("-target %q: want redfish or fake", target)
}

// progress prints one line whenever a job moves to another task or phase.
type progress struct {
	out  io.Writer
	mu   sync.Mutex
	seen map[string]string
}

func newProgress(out io.Writer) *progress { return &progress{out: out, seen: map[string]string{}} }

func (p *progress) update(j job.Job) {
	var line string
	switch {
	case conditions.IsTrue(j.Status.Conditions, conditions.TypeCompleted):
		line = fmt.Sprintf("completed: %s (%s)", j.Status.Result, j.Status.Message)
	case j.Status.CurrentTask < len(j.Status.Tasks):
		i := j.Status.CurrentTask
		ts := j.Status.Tasks[i]
		phase := string(ts.Phase)
		switch ts.Phase {
		case task.PhaseStarted:
			phase = "sending"
		case task.PhaseRequested:
			phase = "verifying"
		case "":
			phase = "next"
		}
		line = fmt.Sprintf("task %d/%d %-22s %s", i+1, len(j.Spec.Tasks), j.Spec.Tasks[i].Describe(), phase)
		if ts.LastError != "" {
			line += " (retrying: " + ts.LastError + ")"
		}
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[j.Name] == line {
		return
	}
	p.seen[j.Name] = line
	fmt.Fprintf(p.out, "%s  %s  %s\n", time.Now().Format("15:04:05.000"), j.Name, line)
}
