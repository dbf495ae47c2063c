// Command bmcjob runs jobs against one BMC: a job given as a JSON spec file,
// or one-shot power and boot commands that need no spec, and prints their
// progress and result.
//
//	go install github.com/bmckit/bmckit/cmd/bmcjob@latest
//
//	bmcjob run -spec job.json [-bmc URL] [-user NAME] [-insecure] [-simulate] [-json]
//	bmcjob power status|on|off|soft-off|cycle|reset -bmc URL -user NAME
//	bmcjob boot pxe|disk|cd|bios|http [-uri URL] [-persistent] [-mode uefi|legacy] -bmc URL -user NAME
//	bmcjob firmware update -image URL -component ID -version V [-reset auto|none] -bmc URL -user NAME
//	bmcjob inventory -bmc URL -user NAME [-json]
//	bmcjob bios get | set NAME=VALUE... [-reboot] | verify NAME=VALUE... -bmc URL -user NAME
//	bmcjob accounts list -bmc URL -user NAME [-json]
//	bmcjob rotate -credentials-file FILE [-credentials-ref REF] [-mode password|account] [-new-user NAME] -bmc URL
//	bmcjob secureboot status|on|off|reset-keys KIND -bmc URL -user NAME
//	bmcjob bootorder status | set [-order REF,...] [-enable REF] [-disable REF] [-http-boot-uri URL] -bmc URL -user NAME
//	bmcjob locate on|off|blink -bmc URL -user NAME
//	bmcjob nmi -bmc URL -user NAME
//	bmcjob rollout -servers FILE -template FILE [-max-unavailable N|P%] [-per-group LABEL=N|LABEL=P%]... [-canary N] [-canary-approval] [-failure-budget N|P%] [-name NAME] [-db PATH] [-json]
//	bmcjob rollout -simulate N [-fail P%] [...]   (a simulated fleet, a built-in BIOS update)
//	bmcjob spec [NAME]            (the example specs built in: list, or print one)
//	bmcjob version                (also --version)
//	bmcjob -spec job.json ...     (the flags alone, as before: same as run)
//	bmcjob -h                     (usage; also "bmcjob COMMAND -h")
//
// For example:
//
//	BMC_PASSWORD=... bmcjob power status -bmc redfish://10.0.0.5 -user admin
//	bmcjob boot http -uri https://boot.example/ipxe.efi -simulate
//	bmcjob spec netboot | bmcjob run -simulate -spec -
//
// From a checkout, "go run ./cmd/bmcjob" is bmcjob.
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
// -user names the BMC account and is required against a real BMC (-user ""
// for an IPMI null user); the password comes from the environment variable
// BMC_PASSWORD (never a flag: flags show in process listings). Both are
// checked before anything is dialed. -simulate runs against an in-process
// simulated Redfish BMC instead (its address and credentials replace any
// other). -insecure skips TLS verification for BMCs with self-signed
// certificates; -cacert FILE trusts a private CA instead. Flags may come
// before or after a command's arguments. Jobs are kept in memory; the exit
// code is 0 only when the job succeeded (and for -h).
//
// # Credentials file, rotation and reboots
//
// Every command that talks to a BMC takes -credentials-file FILE, a
// bmc.FileCredentials JSON file (mode 0600), and -credentials-ref REF, the
// BMC's entry in it (default: the -bmc address as given). The entry's
// credentials are used; -user or $BMC_PASSWORD that differ from it are an
// error, and an entry that is not there is stored from -user and
// $BMC_PASSWORD. "bmcjob rotate" needs the file: the new password is
// generated to the BMC's policy, stored there (pending, then current once
// a login with it worked) and never printed, on any stream or in -json;
// its output says only whose credentials are in which file and entry.
// secureboot and bootorder changes the BMC applies at the next boot end
// their text output with "reboot required: ..."; bmcjob never reboots by
// itself. locate and nmi are commands because bmcjob runs one-task jobs as
// commands; specs/locate.json shows the kind in a spec.
// docs/bmcjob-security.md has the decisions and what was rejected.
//
// # Output
//
// Results go to standard output: a line per task (the one-shot commands:
// "<task>: <result>: <message>"), or with -json the job's final status as
// one JSON document and nothing else. -json defaults to false for every
// command: people read the lines, scripts ask for JSON. Progress goes to
// standard error: a line for every task that moves on, and while a task
// waits a line every -progress (default 3s) naming the task and what it
// waits for, so a BMC that does not answer shows as retries, not silence.
// When -timeout ends the wait, the message names the task and what it was
// waiting for. Help asked for with -h goes to standard output; usage
// printed for a mistake goes to standard error.
//
// A failure is told once: a job that ran and failed has its reason and
// message in its result on standard output; its progress line says only
// "failed (<reason>)", and bmcjob exits 1 without repeating it on standard
// error. An error that kept a job from running or completing (a bad flag,
// -timeout, Ctrl-C) has no result, and is printed once on standard error.
//
// Why this shape: scripts read results and people read progress, so they
// cannot share a stream. Rejected: -json silencing progress (a 20-minute
// install would show nothing), and progress as JSON lines on standard
// output (a stream is not one document: jq works, json.tool and most
// parsers do not). The waiting lines run on an injected clock, so tests
// advance it instead of sleeping.
//
// # A BMC that cannot be reached
//
// A job retries a refused connection until its task's timeout (10 minutes
// for a power task): a controller must ride out a BMC that reboots. At a
// terminal, a refused connection is far more often a wrong address or port,
// so bmcjob gives up when every connection to the BMC has been refused (or
// had no route) for -unreachable, default 30s, before the BMC was ever
// reached; the job then fails with a message saying so. Once one
// connection succeeded, later refusals (the BMC's own reset) are retried as
// the library retries them. -unreachable 0 retries until -timeout.
//
// # BMCs that store a one-time boot override as persistent
//
// The shipped netboot spec asks for a one-time PXE boot, which the BMC
// clears by itself after the boot, even if bmcjob dies before it could.
// Some BMCs and emulators (sushy-tools, some Supermicro firmware) store or
// revert it instead; the boot task then fails and its message says to add
// ?bootOnce=emulate to the BMC address:
//
//	bmcjob run -spec netboot.json -bmc 'redfish://10.0.0.5/redfish/v1/Systems/1?bootOnce=emulate' -user admin
//
// That sets the override persistent and puts back the one it found after
// the boot. The spec keeps the one-time override (decided in issue 36):
// emulation is a property of the BMC, so it belongs to the BMC's address,
// and a persistent override left behind by a process that died is worse on
// the BMCs that do honour Once.
//
// With -simulate, a job with wait-for-boot tasks runs too: the simulated
// server "boots" (reports SignalBootStateReceived to an in-process boot
// tracker) once it is powered on while a boot attempt is open. Rejected: an
// HTTP boot server and callback inside bmcjob (examples/bootserver shows
// that path; here it would add ports and tokens for nothing the job sees).
//
// # Rollouts
//
// "bmcjob rollout" runs one job template across many servers with package
// rollout (docs/rollouts.md, "From the command line"): -servers is JSON
// lines (one {"name", "bmc", "credentialsRef", "systemUUID", "labels"}
// object per line; a JSON array of them is read too), -template a job spec
// without "bmc". Credentials: -credentials-file (each server's entry is its
// credentialsRef, else the template's, else its bmc address as written),
// or -user and $BMC_PASSWORD for every server. The rollout and its jobs are
// kept in -db (bbolt, default bmcjob-rollouts.db; with -simulate, memory
// unless -db is given), so the same command run again resumes it; -name
// defaults to a hash of the servers, template and policy. Progress goes to
// standard error: a progress bar redrawn in place on a terminal, otherwise
// plain lines (the counts at most once a second, each rollout transition
// and failed server at once); -json prints every event and then the final
// status as JSON lines on standard output. It exits 0 only when the result
// is Succeeded. The first Ctrl-C aborts the rollout (running jobs finish,
// nothing new starts, the result is Aborted); the second exits at once
// and the same command resumes.
//
// # Version
//
// "bmcjob version" (or --version) prints the module version Go stamped into
// the binary (runtime/debug.ReadBuildInfo): the tag for "go install
// github.com/bmckit/bmckit/cmd/bmcjob@v0.1.0", "(devel)" or a VCS
// pseudo-version for a build from a checkout. The command is a module of
// its own (github.com/bmckit/bmckit/cmd/bmcjob) so that go install can fetch
// it: go install refuses a module with replace directives, and the release
// script drops this module's in the commit it tags (docs/modules.md,
// "Releases").
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
	"sync"
	"time"

	"github.com/bmckit/bmckit/clock"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &env{password: os.Getenv("BMC_PASSWORD"), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, interrupts: &interrupts{}}
	// Ctrl-C ends the command's context, unless the command takes it
	// (rollout's first Ctrl-C aborts the rollout gracefully; the next one
	// ends the context).
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt)
	go func() {
		for range sigc {
			if !e.interrupts.take() {
				cancel()
			}
		}
	}()
	if err := run(ctx, e, os.Args[1:]); err != nil {
		// A job that ran and failed has its result, message included, on
		// standard output already.
		var printed *resultError
		if !errors.As(err, &printed) {
			fmt.Fprintln(os.Stderr, "bmcjob:", err)
		}
		os.Exit(1)
	}
}

// env is what a command gets from its process.
type env struct {
	// password is $BMC_PASSWORD.
	password string
	// stdin is standard input (rollout -canary-approval asks there); nil
	// reads as empty.
	stdin io.Reader
	// stdout gets results only (with -json exactly one JSON document);
	// stderr gets progress, usage after mistakes and messages.
	stdout, stderr io.Writer
	// clock times the progress lines and -timeout. Defaults to the wall
	// clock; tests advance a fake one.
	clock clock.Clock
	// version overrides the build's module version (tests).
	version string
	// interrupts lets a command take Ctrl-C before it ends the context
	// (nil: it never does). Tests call its take to press Ctrl-C.
	interrupts *interrupts
	// rolloutFleet, when set, replaces startRolloutFleet for "rollout
	// -simulate" (tests: a fleet that outlives one run, whose state-change
	// log they read); the command calls done when it ends.
	rolloutFleet func(n int, powerDelay time.Duration, failing map[int]bool) (f *rolloutFleet, done func())
}

// interrupts routes Ctrl-C to the command that asked for it.
type interrupts struct {
	mu sync.Mutex
	f  func() bool
}

// handle makes f see every Ctrl-C first; f returns true when it took it
// (nothing more happens), false to let it end the command's context.
// handle(nil) stops that.
func (i *interrupts) handle(f func() bool) {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.f = f
}

// take gives one Ctrl-C to the command's handler; false when there is
// none or it did not take it.
func (i *interrupts) take() bool {
	if i == nil {
		return false
	}
	i.mu.Lock()
	f := i.f
	i.mu.Unlock()
	return f != nil && f()
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
	{"health", "[flags]", "read the health the BMC reports for the system, its chassis and its manager", healthCmd},
	{"log", "list [SCOPE/ID] | clear SCOPE/ID [flags]", "list the event logs or a log's entries (newest first); clear a log, its entries kept in the job's status first", logCmd},
	{"accounts", "list [flags]", "list the BMC's accounts (never a password)", accountsCmd},
	{"rotate", "-credentials-file FILE [-mode password|account] [flags]", "rotate the BMC credentials; the new ones go to -credentials-file, never to the screen", rotateCmd},
	{"secureboot", "status|on|off|reset-keys KIND [flags]", "read or set UEFI Secure Boot, or reset its keys (says when a reboot is required)", securebootCmd},
	{"bootorder", "status | set [-order REF,...] [-enable REF] [-disable REF] [-http-boot-uri URL]", "read or set the persistent boot order (says when a reboot is required)", bootorderCmd},
	{"locate", "on|off|blink [flags]", "set the locator (identify) LED", locateCmd},
	{"nmi", "[flags]", "send the host a diagnostic interrupt (NMI: a hung OS writes a crash dump)", nmiCmd},
	{"rollout", "-servers FILE -template FILE [-max-unavailable N|P%] [-canary N] [-simulate N] [flags]", "run one job template across a fleet: maxUnavailable, per-group limits, canary, failure budget (docs/rollouts.md)", rolloutCmd},
	{"monitor", "[BMC URL ...] [-simulate N] [flags]", "live table of machines: Contactable and power (Ctrl-C quits)", monitorCmd},
	{"spec", "[NAME]", "list the example specs built into bmcjob, or print one (bmcjob spec netboot | bmcjob run -spec -)", specCmd},
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
	fmt.Fprintln(out, "The password comes from $BMC_PASSWORD, or from -credentials-file FILE (rotate keeps")
	fmt.Fprintln(out, "the new password there and never prints it). \"bmcjob COMMAND -h\" lists a command's flags;")
	fmt.Fprintln(out, "\"bmcjob -spec FILE\" (flags only) is the same as \"bmcjob run -spec FILE\".")
	fmt.Fprintln(out, "Results go to standard output (-json: one JSON document), progress to standard error.")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "A job spec (\"bmcjob spec\" lists the examples built in; -bmc replaces \"bmc\"):")
	fmt.Fprintln(out, specExample)
	fmt.Fprintln(out, "examples:")
	fmt.Fprintln(out, "  bmcjob spec netboot | bmcjob run -simulate -spec -")
	fmt.Fprintln(out, "  BMC_PASSWORD=... bmcjob run -spec netboot.json -bmc redfish://10.0.0.5/redfish/v1/Systems/1 -user admin -cacert bmc-ca.pem")
	fmt.Fprintln(out, "  BMC_PASSWORD=... bmcjob power status -bmc ipmi://10.0.0.6 -user admin")
	fmt.Fprintln(out, "A BMC that keeps a one-time boot as persistent (sushy-tools): add ?bootOnce=emulate to -bmc.")
}

// specExample is specs/netboot.json (a test keeps them equal).
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
