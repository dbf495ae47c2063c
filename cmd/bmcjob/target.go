package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/oneshot"
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
	progress   time.Duration
	// unreachable bounds how long a BMC that was never reached is
	// retried (-unreachable).
	unreachable time.Duration
	// credsFile and credsRef are -credentials-file and -credentials-ref
	// (credentialsfile.go).
	credsFile, credsRef string
	// fs is the command's flag set, to learn whether -user was given
	// (-user "" is an IPMI null user, not a missing user).
	fs *flag.FlagSet
}

// defaultUnreachable is -unreachable's default. The library's own default
// for a job is to retry a refused connection until the task's timeout (10
// minutes for a power task): a controller must ride out a BMC's reboot.
// A person at a terminal who typed a wrong address or port should not
// wait that long, so the CLI gives up sooner, and only until the BMC was
// reached once: a BMC that refuses connections later (its own reset, a
// firmware update) is retried as the library retries it.
const defaultUnreachable = 30 * time.Second

func addTargetFlags(fs *flag.FlagSet, timeout time.Duration) *targetFlags {
	t := &targetFlags{fs: fs}
	fs.StringVar(&t.bmcURL, "bmc", "", "BMC address, e.g. redfish://10.0.0.5/redfish/v1/Systems/1 or ipmi://10.0.0.6")
	fs.StringVar(&t.user, "user", "", "BMC user name (password from $BMC_PASSWORD)")
	fs.BoolVar(&t.insecure, "insecure", false, "skip TLS certificate verification (self-signed BMCs)")
	fs.StringVar(&t.caCert, "cacert", "", "PEM file of the CA(s) that sign the BMC's TLS certificate")
	fs.BoolVar(&t.noPassword, "no-password", false, "the BMC account has no password (otherwise $BMC_PASSWORD is required)")
	fs.BoolVar(&t.simulate, "simulate", false, "run against an in-process simulated Redfish BMC (powered on)")
	fs.DurationVar(&t.simDelay, "simulate-power-delay", 2*time.Second, "with -simulate: how long the simulated BMC's power changes take")
	fs.DurationVar(&t.timeout, "timeout", timeout, "give up waiting after this long")
	fs.DurationVar(&t.progress, "progress", 3*time.Second, "while a task waits, print what it waits for this often (on standard error)")
	fs.DurationVar(&t.unreachable, "unreachable", defaultUnreachable, "give up when the BMC refused every connection (or had no route) for this long before it was ever reached; 0: retry until -timeout")
	addCredentialsFlags(fs, t)
	return t
}

// checkBMC checks -bmc (unless -simulate) before anything is opened.
func (t *targetFlags) checkBMC() error {
	if t.simulate {
		return nil
	}
	if t.bmcURL == "" {
		return errors.New("-bmc is required (or -simulate)")
	}
	if _, err := bmc.ParseEndpoint(t.bmcURL); err != nil {
		// "-bmc: invalid BMC address: ...", without the package's own
		// "bmc: " in front.
		return fmt.Errorf("-bmc: %s", strings.TrimPrefix(err.Error(), "bmc: "))
	}
	return nil
}

// userGiven reports whether -user was on the command line.
func (t *targetFlags) userGiven() bool {
	given := false
	t.fs.Visit(func(f *flag.Flag) { given = given || f.Name == "user" })
	return given
}

// conn is what a command needs to reach its BMC.
type conn struct {
	addr   string // the BMC address to use ("" when -bmc was not given)
	dialer bmc.Dialer
	creds  bmc.Credentials
	close  func()
	// boot is the simulated server's boot tracker (-simulate), nil
	// otherwise: without one, wait-for-boot tasks fail NotSupported.
	boot job.BootTracker
	// sim is the simulation (-simulate), nil otherwise.
	sim *simulation
	// missing is set when -user was not given, or $BMC_PASSWORD is empty
	// without -no-password (both without -simulate).
	missing error
	// resolver and ref are where the job's credentials come from:
	// -credentials-file (a bmc.FileCredentials) and its reference, or
	// creds itself under the reference "cli".
	resolver bmc.CredentialsResolver
	ref      string
}

// open starts the simulator for -simulate (its address replaces -bmc) and
// builds the dialer. It says where the simulator listens on e.stderr.
func (t *targetFlags) open(e *env) (*conn, error) {
	password := e.password
	c := &conn{addr: t.bmcURL, creds: bmc.Credentials{Username: t.user, Password: password}, close: func() {}}
	rfOpts := redfish.Options{InsecureSkipVerify: t.insecure}
	if t.caCert != "" {
		pem, err := os.ReadFile(t.caCert)
		if err != nil {
			return nil, fmt.Errorf("-cacert: %w", err)
		}
		rfOpts.CACertPEM = pem
	}
	// Both reported when the job is about to run, after the spec and the
	// address were validated, so input errors come first; either way
	// before anything is dialed.
	switch {
	case !t.simulate && !t.userGiven():
		c.missing = errors.New("-user is required: the BMC account to log in as (the password comes from $BMC_PASSWORD; -user \"\" for an IPMI null user)")
	case !t.simulate && password == "" && !t.noPassword:
		c.missing = errors.New("the BMC password is missing: set $BMC_PASSWORD (it is never a flag, so it stays out of ps and shell history), or pass -no-password for an account without one")
	}
	if t.simulate {
		sim, err := startSimulation(t.simDelay)
		if err != nil {
			return nil, err
		}
		c.addr = sim.srv.Address("1")
		c.creds = sim.srv.Credentials()
		c.close = sim.close
		c.boot = sim
		c.sim = sim
		rfOpts.CACertPEM = sim.srv.CACertPEM()
		fmt.Fprintf(e.stderr, "simulated Redfish BMC at %s\n", c.addr)
	}
	c.resolver, c.ref = bmc.StaticCredentials{"cli": c.creds}, "cli"
	if t.credsFile != "" {
		if err := t.useCredentialsFile(e, c); err != nil {
			c.close()
			return nil, err
		}
	}
	// redfish:// and ipmi:// to their drivers, as oneshot.Run maps them.
	d, err := oneshot.NewDialer(oneshot.Options{Redfish: rfOpts})
	if err != nil {
		c.close()
		return nil, err
	}
	c.dialer = d
	if t.unreachable > 0 && !t.simulate {
		c.dialer = &reachGuard{Dialer: d, limit: t.unreachable, now: e.now}
	}
	return c, nil
}

// reachGuard is the CLI's bound on a BMC that was never reached (see
// defaultUnreachable): once every dial has failed with "connection
// refused", "no route to host" or "network unreachable" for limit, the
// next such failure is permanent, so the job fails at once with a message
// that says what to check, instead of retrying until -timeout. The first
// successful dial turns the bound off for the rest of the run.
type reachGuard struct {
	bmc.Dialer
	limit time.Duration
	now   func() time.Time

	mu      sync.Mutex
	since   time.Time // the first unreached dial; zero: none yet
	reached bool
}

func (g *reachGuard) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	drv, err := g.Dialer.Dial(ctx, ep, creds)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		g.reached = true
		return drv, nil
	}
	if g.reached || !unreached(err) {
		return nil, err
	}
	now := g.now()
	if g.since.IsZero() {
		g.since = now
	}
	if now.Sub(g.since) < g.limit {
		return nil, err
	}
	return nil, bmc.Permanent(fmt.Errorf("%w; gave up: no connection to %s for %s (-unreachable): check the address and port, and that this host can reach the BMC", err, ep.HostPort(), now.Sub(g.since).Round(time.Second)))
}

// unreached reports a dial error that means the BMC was not reached at
// all, as opposed to a BMC that answered badly or slowly.
func unreached(err error) bool {
	for _, errno := range []error{syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// simulatedImage points a firmwareUpdate task at an image the simulation
// serves (-simulate): the simulated BMC fetches it and installs Version on
// Component, whatever imageURI the spec names. Other tasks, and real BMCs,
// are left alone.
func (c *conn) simulatedImage(ts *task.Spec) {
	if fu := ts.FirmwareUpdate; fu != nil && c.sim != nil {
		a := *fu
		a.ImageURI = c.sim.imageURL(fu.Component, fu.Version)
		ts.FirmwareUpdate = &a
	}
}
