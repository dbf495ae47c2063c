// Command bmcjob runs jobs against one BMC: a job given as a JSON spec file,
// or one-shot power and boot commands that need no spec, and prints their
// progress and result.
//
//	bmcjob run -spec job.json [-bmc URL] [-user NAME] [-insecure] [-simulate] [-json=false]
//	bmcjob power status|on|off|soft-off|cycle|reset -bmc URL [-user NAME]
//	bmcjob boot pxe|disk|cd|bios|http [-uri URL] [-persistent] [-mode uefi|legacy] -bmc URL
//	bmcjob firmware update -image URL -component ID -version V [-reset auto|none] -bmc URL
//	bmcjob inventory -bmc URL [-json]
//	bmcjob bios get | set NAME=VALUE... [-reboot] | verify NAME=VALUE... -bmc URL
//	bmcjob version                (also --version)
//	bmcjob -spec job.json ...     (the flags alone, as before: same as run)
//	bmcjob -h                     (usage; also "bmcjob COMMAND -h")
//
// For example:
//
//	BMC_PASSWORD=... go run ./examples/bmcjob power status -bmc redfish://10.0.0.5 -user admin
//	go run ./examples/bmcjob boot http -uri https://boot.example/ipxe.efi -simulate
//	go run ./examples/bmcjob run -simulate -spec job.json
//
// The spec of run is a job.Spec (decoded strictly: unknown fields are errors):
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
// -bmc overrides the spec's "bmc" (it is required by the one-shot commands).
// The password comes from the environment variable BMC_PASSWORD (never a
// flag: flags show in process listings). -simulate runs against an
// in-process simulated Redfish BMC instead (its address replaces any other).
// -insecure skips TLS verification for BMCs with self-signed certificates.
// Flags may come before or after a command's arguments. Jobs are kept in
// memory; the exit code is 0 only when the job succeeded (and for -h).
//
// # Output
//
// Results go to standard output: the job's final status as JSON (run, and
// the one-shot commands with -json: one JSON document, nothing else), or a
// one-shot command's result line. Progress goes to standard error: a line
// for every task that moves on, and while a task waits a line every
// -progress (default 3s) naming the task and what it waits for, so a BMC
// that does not answer shows as retries, not silence. When -timeout ends the
// wait, the message names the task and what it was waiting for. Help asked
// for with -h goes to standard output; usage printed for a mistake goes to
// standard error.
//
// Why this shape: scripts read results and people read progress, so they
// cannot share a stream. Rejected: -json silencing progress (a 20-minute
// install would show nothing), and progress as JSON lines on standard
// output (a stream is not one document: jq works, json.tool and most
// parsers do not). The waiting lines run on an injected clock, so tests
// advance it instead of sleeping.
//
// With -simulate, a job with wait-for-boot tasks runs too: the simulated
// server "boots" (reports SignalBootStateReceived to an in-process boot
// tracker) once it is powered on while a boot attempt is open. Rejected: an
// HTTP boot server and callback inside bmcjob (examples/bootserver shows
// that path; here it would add ports and tokens for nothing the job sees).
//
// "bmcjob version" prints the module version Go stamped into the binary
// (runtime/debug.ReadBuildInfo): the tag for "go install ...@v0.1.0",
// "(devel)" or a VCS pseudo-version for a build from a checkout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/bmckit/bmckit/clock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := &env{password: os.Getenv("BMC_PASSWORD"), stdout: os.Stdout, stderr: os.Stderr}
	if err := run(ctx, e, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bmcjob:", err)
		os.Exit(1)
	}
}

// env is what a command gets from its process.
type env struct {
	// password is $BMC_PASSWORD.
	password string
	// stdout gets results only (with -json exactly one JSON document);
	// stderr gets progress, usage after mistakes and messages.
	stdout, stderr io.Writer
	// clock times the progress lines and -timeout. Defaults to the wall
	// clock; tests advance a fake one.
	clock clock.Clock
	// version overrides the build's module version (tests).
	version string
}

func (e *env) now() time.Time {
	if e.clock == nil {
		return time.Now()
	}
	return e.clock.Now()
}

func (e *env) after(d time.Duration) <-chan time.Time {
	if e.clock == nil {
		return time.After(d)
	}
	return e.clock.After(d)
}

// command is one subcommand. Its run gets the arguments after its name;
// -h must make it return flag.ErrHelp (parseInterspersed does).
type command struct {
	name    string
	args    string // the synopsis after the name, for the usage text
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// commands is the dispatch table: a new subcommand is one entry here (and
// its own file).
var commands = []command{
	{"run", "-spec FILE [flags]", "run a job from a JSON spec file (- for standard input)", runSpec},
	{"power", "status|on|off|soft-off|cycle|reset [flags]", "read (status) or change the power state", powerCmd},
	{"boot", "pxe|disk|cd|bios|http [-uri URL] [flags]", "set the boot device override (http: UEFI HTTP boot from -uri)", bootCmd},
	{"firmware", "update -image URL -component ID -version V [flags]", "install a firmware image and verify the component's version", firmwareCmd},
	{"inventory", "[flags]", "read the hardware inventory (-json: the whole of it)", inventoryCmd},
	{"bios", "get | set NAME=VALUE... [-reboot] | verify NAME=VALUE...", "read, set (checked against the BMC's registry) or verify BIOS attributes", biosCmd},
	{"monitor", "[BMC URL ...] [-simulate N] [flags]", "live table of machines: Contactable and power (Ctrl-C quits)", monitorCmd},
	{"version", "", "print the version of bmcjob (also --version)", versionCmd},
}

// run dispatches to a command; it returns nil for -h.
func run(ctx context.Context, e *env, args []string) error {
	err := dispatch(ctx, e, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		usage(e.stderr)
		return errors.New("a command is required: " + commandNames() + " (-h for help)")
	}
	name := args[0]
	switch {
	case name == "-h" || name == "-help" || name == "--help" || name == "help":
		usage(e.stdout)
		return flag.ErrHelp
	case name == "-version" || name == "--version":
		return versionCmd(ctx, e, args[1:])
	case strings.HasPrefix(name, "-"):
		// The flags alone, as before commands existed: bmcjob -spec f.json.
		return runSpec(ctx, e, args)
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, e, args[1:])
		}
	}
	return fmt.Errorf("unknown command %q: want one of %s (-h for help)", name, commandNames())
}

func commandNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func usage(out io.Writer) {
	fmt.Fprintln(out, "usage: bmcjob COMMAND [arguments] [flags]")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "commands:")
	for _, c := range commands {
		fmt.Fprintf(out, "  %-8s %s\n  %-8s   %s\n", c.name, c.args, "", c.summary)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "The password comes from $BMC_PASSWORD. \"bmcjob COMMAND -h\" lists a command's flags;")
	fmt.Fprintln(out, "\"bmcjob -spec FILE\" (flags only) is the same as \"bmcjob run -spec FILE\".")
	fmt.Fprintln(out, "Results go to standard output (-json: one JSON document), progress to standard error.")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "A job spec (more in examples/bmcjob/specs; -bmc replaces \"bmc\"):")
	fmt.Fprintln(out, specExample)
	fmt.Fprintln(out, "examples:")
	fmt.Fprintln(out, "  bmcjob run -simulate -spec examples/bmcjob/specs/netboot.json")
	fmt.Fprintln(out, "  BMC_PASSWORD=... bmcjob run -spec netboot.json -bmc redfish://10.0.0.5/redfish/v1/Systems/1 -user admin -cacert bmc-ca.pem")
	fmt.Fprintln(out, "  BMC_PASSWORD=... bmcjob power status -bmc ipmi://10.0.0.6 -user admin")
}

// specExample is examples/bmcjob/specs/netboot.json (a test keeps them equal).
const specExample = `{
  "bmc": "redfish://10.0.0.5/redfish/v1/Systems/1",
  "tasks": [
    {"power": {"op": "off"}},
    {"bootDevice": {"device": "pxe", "mode": "uefi"}},
    {"power": {"op": "on"}, "timeout": "5m"}
  ]
}`

// newFlagSet is a command's FlagSet: flag errors and its Usage print to
// e.stderr, and parseInterspersed prints the usage asked for with -h to
// e.stdout.
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("bmcjob "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bmcjob %s %s\n\nflags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments (bmcjob boot http -uri URL -bmc ...), which
// flag.Parse alone stops at, and returns the positional ones. For -h it
// prints the usage to e.stdout and returns flag.ErrHelp; after a flag
// mistake the usage goes to e.stderr.
func parseInterspersed(e *env, fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {} // printed below, once we know whether it was asked for
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(e.stdout)
				usage()
				fs.SetOutput(e.stderr)
			} else {
				usage()
			}
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
