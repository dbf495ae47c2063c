package oneshot

import (
	"context"
	"errors"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
)

// JobName is the name of Run's job in its memory store, as
// [job.Job].Name reports it.
const JobName = "oneshot"

// Options configure [Run]. The zero value means defaults.
type Options struct {
	// Credentials log in to the BMC. They are the job's credentials
	// whatever the spec's CredentialsRef says, and are never stored.
	// Defaults to an empty user name and password.
	Credentials bmc.Credentials
	// Redfish configures the Redfish driver of the default dialer
	// (redfish://, redfish+https://, redfish+http://): CACertPEM for a BMC
	// whose certificate a private CA signs, InsecureSkipVerify for a lab,
	// timeouts. Defaults to redfish.Options{}: the certificate verified
	// against the system's roots.
	Redfish redfish.Options
	// IPMI configures the IPMI driver of the default dialer (ipmi://).
	// Defaults to ipmi.Options{}.
	IPMI ipmi.Options
	// Config holds the job Runner's other settings: Dialer to replace the
	// default dialer (a fake.Fleet in a test), Boot for wait-for-boot
	// tasks, OnUpdate for progress, Logger, Observer. Store must be left
	// nil (Run keeps its job in a fresh memory store); a Credentials
	// resolver set here is used instead of the Credentials field.
	// Defaults to job.Config{}.
	Config job.Config
}

// NewDialer returns a dialer with bmckit's drivers registered by scheme:
// the Redfish driver (configured by opts.Redfish) for redfish://,
// redfish+https:// and redfish+http:// addresses, and the IPMI driver
// (opts.IPMI) for ipmi://. It is Run's default dialer, and fits a
// long-lived [job.Runner] as well (job.StepperConfig.Dialer).
func NewDialer(opts Options) (*bmc.SchemeDialer, error) {
	var d bmc.SchemeDialer
	d.Register("redfish", redfish.NewDialer(opts.Redfish))
	ipmiDialer, err := ipmi.NewDialer(opts.IPMI)
	if err != nil {
		return nil, fmt.Errorf("oneshot: the IPMI driver: %w", err)
	}
	d.Register("ipmi", ipmiDialer)
	return &d, nil
}

// ResultError is Run's error for a job that completed without succeeding
// (Result Failed or Canceled). Job is the completed job; its
// Status.Reason and Status.Message say why (a failed job's message names
// the failing task and the BMC's error).
type ResultError struct {
	Job *job.Job
}

func (e *ResultError) Error() string {
	st := e.Job.Status
	return fmt.Sprintf("job %s (%s): %s", st.Result, st.Reason, st.Message)
}

// Run runs spec to completion as the only job of a [job.Runner] on a
// temporary memory store, with the drivers of [NewDialer], and returns the
// completed job once the runner stopped (so its BMC session is closed).
//
// The error is nil only when the job succeeded. A job that completed
// Failed or Canceled is returned with a [*ResultError]; read
// j.Status.Result, Reason and Message either way. A spec that does not
// validate is refused before anything is dialed (job.ErrInvalidSpec).
// When ctx ends before the job completed, Run cancels nothing on the BMC
// (a request already sent stays sent), stops the runner and returns the
// job as far as it got with an error wrapping ctx.Err() that names the
// task that was running. Bound a run with context.WithTimeout; each task
// is bounded by its own timeout as well (task.Spec.Timeout, a default per
// kind).
func Run(ctx context.Context, spec job.Spec, opts Options) (*job.Job, error) {
	cfg := opts.Config
	if cfg.Store != nil {
		return nil, errors.New("oneshot: Options.Config.Store must be nil: Run keeps its job in a memory store of its own (use job.NewRunner for a store of yours)")
	}
	if spec.CredentialsRef == "" {
		spec.CredentialsRef = JobName
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("oneshot: %w", err)
	}
	cfg.Store = memstore.New()
	if cfg.Credentials == nil {
		cfg.Credentials = bmc.StaticCredentials{spec.CredentialsRef: opts.Credentials}
	}
	if cfg.Dialer == nil {
		d, err := NewDialer(opts)
		if err != nil {
			return nil, err
		}
		cfg.Dialer = d
	}
	runner, err := job.NewRunner(cfg)
	if err != nil {
		return nil, fmt.Errorf("oneshot: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- runner.Start(runCtx) }()
	// The shutdown order of every Runner: cancel, wait for Start to
	// return (sessions logged out), and only then drop the store.
	stop := func() error {
		cancel()
		return <-done
	}
	if _, err := runner.Submit(ctx, JobName, spec); err != nil {
		_ = stop()
		return nil, fmt.Errorf("oneshot: submitting the job: %w", err)
	}
	j, waitErr := runner.Wait(ctx, JobName)
	if waitErr != nil {
		// ctx ended first: the job as far as it got, read from the memory
		// store after the runner stopped.
		_ = stop()
		cur, err := runner.Get(context.WithoutCancel(ctx), JobName)
		if err != nil {
			return nil, fmt.Errorf("oneshot: waiting for the job: %w", waitErr)
		}
		return cur, fmt.Errorf("oneshot: %s: %w", running(cur), waitErr)
	}
	if err := stop(); err != nil {
		return j, fmt.Errorf("oneshot: stopping the runner: %w", err)
	}
	if j.Status.Result != conditions.ResultSucceeded {
		return j, &ResultError{Job: j}
	}
	return j, nil
}

// running says which task of an unfinished job was running.
func running(j *job.Job) string {
	i := j.Status.CurrentTask
	if i < 0 || i >= len(j.Spec.Tasks) {
		return "the job did not complete"
	}
	return fmt.Sprintf("the job did not complete (task %d/%d %s was running)", i+1, len(j.Spec.Tasks), j.Spec.Tasks[i].Describe())
}
