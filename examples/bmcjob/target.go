package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// targetFlags are the flags every command that talks to one BMC shares.
type targetFlags struct {
	bmcURL   string
	user     string
	insecure bool
	caCert   string // PEM file for -cacert
	// noPassword allows an empty $BMC_PASSWORD.
	noPassword bool
	simulate   bool
	simDelay   time.Duration
	timeout    time.Duration
}

func addTargetFlags(fs *flag.FlagSet, timeout time.Duration) *targetFlags {
	t := &targetFlags{}
	fs.StringVar(&t.bmcURL, "bmc", "", "BMC address, e.g. redfish://10.0.0.5/redfish/v1/Systems/1 or ipmi://10.0.0.6")
	fs.StringVar(&t.user, "user", "", "BMC user name (password from $BMC_PASSWORD)")
	fs.BoolVar(&t.insecure, "insecure", false, "skip TLS certificate verification (self-signed BMCs)")
	fs.StringVar(&t.caCert, "cacert", "", "PEM file of the CA(s) that sign the BMC's TLS certificate")
	fs.BoolVar(&t.noPassword, "no-password", false, "the BMC account has no password (otherwise $BMC_PASSWORD is required)")
	fs.BoolVar(&t.simulate, "simulate", false, "run against an in-process simulated Redfish BMC (powered on)")
	fs.DurationVar(&t.simDelay, "simulate-power-delay", 2*time.Second, "with -simulate: how long the simulated BMC's power changes take")
	fs.DurationVar(&t.timeout, "timeout", timeout, "give up waiting after this long")
	return t
}

// conn is what a command needs to reach its BMC.
type conn struct {
	addr   string // the BMC address to use ("" when -bmc was not given)
	dialer bmc.Dialer
	creds  bmc.Credentials
	close  func()
	// missing is set when $BMC_PASSWORD is empty without -no-password.
	missing error
}

// open starts the simulator for -simulate (its address replaces -bmc) and
// builds the dialer.
func (t *targetFlags) open(out io.Writer, password string) (*conn, error) {
	c := &conn{addr: t.bmcURL, creds: bmc.Credentials{Username: t.user, Password: password}, close: func() {}}
	rfOpts := redfish.Options{InsecureSkipVerify: t.insecure}
	if t.caCert != "" {
		pem, err := os.ReadFile(t.caCert)
		if err != nil {
			return nil, fmt.Errorf("-cacert: %w", err)
		}
		rfOpts.CACertPEM = pem
	}
	if !t.simulate && password == "" && !t.noPassword {
		// Reported when the job is about to run, after the spec and the
		// address were validated, so input errors come first.
		c.missing = errors.New("the BMC password is missing: set $BMC_PASSWORD (it is never a flag, so it stays out of ps and shell history), or pass -no-password for an account without one")
	}
	if t.simulate {
		srv := redfishtest.NewTLSServer(redfishtest.Config{PowerDelay: t.simDelay})
		srv.SetPower("1", "On")
		c.addr = srv.Address("1")
		c.creds = srv.Credentials()
		c.close = srv.Close
		rfOpts.CACertPEM = srv.CACertPEM()
		fmt.Fprintf(out, "simulated Redfish BMC at %s\n", c.addr)
	}
	d, err := newDialer(rfOpts)
	if err != nil {
		c.close()
		return nil, err
	}
	c.dialer = d
	return c, nil
}

// newDialer maps redfish:// and ipmi:// addresses to their drivers.
func newDialer(rfOpts redfish.Options) (*bmc.SchemeDialer, error) {
	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(rfOpts))
	ipmiDialer, err := ipmi.NewDialer(ipmi.Options{})
	if err != nil {
		return nil, err
	}
	dialer.Register("ipmi", ipmiDialer)
	return &dialer, nil
}

// runJob runs spec with a Runner on a memory store, printing a line for
// each change of task or phase, and returns the completed job. The job's
// own failure is not an error here: the caller reads j.Status.
func runJob(ctx context.Context, c *conn, spec job.Spec, timeout time.Duration, out io.Writer) (job.Job, error) {
	if c.missing != nil {
		return job.Job{}, c.missing
	}
	// Each task's last printed line: an update prints every task whose
	// line changed, so a task that finished within one step still gets its
	// "done" (or "failed") line.
	last := map[int]string{}
	runner, err := job.NewRunner(job.Config{
		Store:       memstore.New(),
		Dialer:      c.dialer,
		Credentials: job.StaticCredentials{"cli": c.creds},
		OnUpdate: func(j job.Job) {
			for i, ts := range j.Status.Tasks {
				if i >= len(j.Spec.Tasks) || (ts.Phase == task.PhasePending && i != j.Status.CurrentTask) {
					continue
				}
				line := fmt.Sprintf("task %d/%d %s: %s", i+1, len(j.Spec.Tasks), j.Spec.Tasks[i].Describe(), phaseName(ts))
				if ts.LastError != "" && ts.Phase != task.PhaseDone {
					line += " (retrying: " + ts.LastError + ")"
				}
				if line != last[i] {
					last[i] = line
					fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05"), line)
				}
			}
		},
	})
	if err != nil {
		return job.Job{}, err
	}
	spec.CredentialsRef = "cli"
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runner.Start(runCtx) }()
	if _, err := runner.Submit(ctx, "bmcjob", spec); err != nil {
		cancel()
		<-done
		return job.Job{}, err
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, timeout)
	defer waitCancel()
	j, err := runner.Wait(waitCtx, "bmcjob")
	cancel()
	<-done
	if err != nil {
		return job.Job{}, fmt.Errorf("waiting for the job: %w", err)
	}
	return *j, nil
}

// phaseName is a task's progress word: a finished task says how it ended
// ("done", or "failed: <message>"), never "done" for a failure.
func phaseName(ts task.Status) string {
	switch ts.Phase {
	case task.PhaseStarted:
		return "sending"
	case task.PhaseRequested:
		return "verifying"
	case task.PhaseDone:
		switch ts.Result {
		case conditions.ResultSucceeded:
			return "done"
		case "":
			return "finished"
		default:
			word := strings.ToLower(string(ts.Result))
			if ts.Message != "" {
				word += ": " + ts.Message
			}
			return word
		}
	}
	return "pending"
}
