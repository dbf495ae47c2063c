// Command bmcjob runs one job, given as a JSON spec, against one BMC and
// prints its progress and final status.
//
//	BMC_PASSWORD=... go run ./examples/bmcjob -spec job.json -user admin
//	go run ./examples/bmcjob -simulate -spec job.json
//
// The spec is a job.Spec (decoded strictly: unknown fields are errors):
//
//	{
//	  "bmc": "redfish://10.0.0.5/redfish/v1/Systems/1",
//	  "tasks": [
//	    {"power": {"op": "off"}},
//	    {"bootDevice": {"device": "pxe", "mode": "uefi"}},
//	    {"power": {"op": "on"}, "timeout": "5m"}
//	  ]
//	}
//
// -bmc overrides the spec's "bmc". The password comes from the environment
// variable BMC_PASSWORD (never a flag: flags show in process listings).
// -simulate runs the job against an in-process simulated Redfish BMC instead
// (its address replaces the spec's). -insecure skips TLS verification for
// BMCs with self-signed certificates. Jobs are kept in memory; the exit code
// is 0 only when the job succeeded.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv("BMC_PASSWORD"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bmcjob:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, password string, out io.Writer) error {
	fs := flag.NewFlagSet("bmcjob", flag.ContinueOnError)
	specPath := fs.String("spec", "", "JSON job spec file (- for standard input); required")
	bmcURL := fs.String("bmc", "", "BMC address; overrides the spec's bmc")
	user := fs.String("user", "", "BMC user name (password from $BMC_PASSWORD)")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification (self-signed BMCs)")
	simulate := fs.Bool("simulate", false, "run against an in-process simulated Redfish BMC")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up waiting after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *specPath == "" {
		return fmt.Errorf("-spec is required")
	}
	var raw []byte
	var err error
	if *specPath == "-" {
		raw, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	} else {
		raw, err = os.ReadFile(*specPath)
	}
	if err != nil {
		return fmt.Errorf("reading -spec: %w", err)
	}
	creds := bmc.Credentials{Username: *user, Password: password}
	rfOpts := redfish.Options{InsecureSkipVerify: *insecure}
	if *simulate {
		srv := redfishtest.NewTLSServer(redfishtest.Config{PowerDelay: 2 * time.Second})
		defer srv.Close()
		srv.SetPower("1", "On")
		*bmcURL = srv.Address("1")
		creds = srv.Credentials()
		rfOpts.CACertPEM = srv.CACertPEM()
		fmt.Fprintf(out, "simulated Redfish BMC at %s\n", *bmcURL)
	}
	if *bmcURL != "" {
		// The address from the flag replaces the spec's, before strict
		// decoding and validation.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return fmt.Errorf("-spec %s: %w: decoding JSON: %v", *specPath, job.ErrInvalidSpec, err)
		}
		fields["bmc"], _ = json.Marshal(*bmcURL)
		raw, _ = json.Marshal(fields)
	}
	spec, err := job.DecodeSpec(raw)
	if err != nil {
		return fmt.Errorf("-spec %s: %w", *specPath, err)
	}

	var dialer bmc.SchemeDialer
	dialer.Register("redfish", redfish.NewDialer(rfOpts))
	ipmiDialer, err := ipmi.NewDialer(ipmi.Options{})
	if err != nil {
		return err
	}
	dialer.Register("ipmi", ipmiDialer)

	var last string
	runner, err := job.NewRunner(job.Config{
		Store:       memstore.New(),
		Dialer:      &dialer,
		Credentials: job.StaticCredentials{"cli": creds},
		OnUpdate: func(j job.Job) {
			if j.Status.CurrentTask >= len(j.Status.Tasks) {
				return
			}
			ts := j.Status.Tasks[j.Status.CurrentTask]
			line := fmt.Sprintf("task %d/%d %s: %s", j.Status.CurrentTask+1, len(j.Spec.Tasks), j.Spec.Tasks[j.Status.CurrentTask].Describe(), phaseName(ts.Phase))
			if ts.LastError != "" {
				line += " (retrying: " + ts.LastError + ")"
			}
			if line != last {
				last = line
				fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05"), line)
			}
		},
	})
	if err != nil {
		return err
	}
	spec.CredentialsRef = "cli"
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runner.Start(runCtx) }()
	if _, err := runner.Submit(ctx, "bmcjob", spec); err != nil {
		return err
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, *timeout)
	defer waitCancel()
	j, err := runner.Wait(waitCtx, "bmcjob")
	cancel()
	<-done
	if err != nil {
		return fmt.Errorf("waiting for the job: %w", err)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(j.Status); err != nil {
		return err
	}
	if j.Status.Result != conditions.ResultSucceeded {
		return fmt.Errorf("job %s: %s", j.Status.Result, j.Status.Message)
	}
	return nil
}

func phaseName(p task.Phase) string {
	switch p {
	case task.PhaseStarted:
		return "sending"
	case task.PhaseRequested:
		return "verifying"
	case task.PhaseDone:
		return "done"
	}
	return "pending"
}
