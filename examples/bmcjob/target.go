package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/job"
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
	fs.DurationVar(&t.progress, "progress", 3*time.Second, "while a task waits, print what it waits for this often (on standard error)")
	return t
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
	// missing is set when $BMC_PASSWORD is empty without -no-password.
	missing error
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
	if !t.simulate && password == "" && !t.noPassword {
		// Reported when the job is about to run, after the spec and the
		// address were validated, so input errors come first.
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
