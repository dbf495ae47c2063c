// Command bmcjob runs jobs against one BMC: a job given as a JSON spec file,
// or one-shot power and boot commands that need no spec, and prints their
// progress and result.
//
//	bmcjob run -spec job.json [-bmc URL] [-user NAME] [-insecure] [-simulate]
//	bmcjob power status|on|off|soft-off|cycle|reset -bmc URL [-user NAME]
//	bmcjob boot pxe|disk|cd|bios|http [-uri URL] [-persistent] [-mode uefi|legacy] -bmc URL
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv("BMC_PASSWORD"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bmcjob:", err)
		os.Exit(1)
	}
}

// command is one subcommand. Its run gets the arguments after its name, the
// password from the environment and where to print; -h must make it return
// flag.ErrHelp (a FlagSet from newFlagSet does).
type command struct {
	name    string
	args    string // the synopsis after the name, for the usage text
	summary string
	run     func(ctx context.Context, args []string, password string, out io.Writer) error
}

// commands is the dispatch table: a new subcommand is one entry here (and
// its own file).
var commands = []command{
	{"run", "-spec FILE [flags]", "run a job from a JSON spec file (- for standard input)", runSpec},
	{"power", "status|on|off|soft-off|cycle|reset [flags]", "read (status) or change the power state", powerCmd},
	{"boot", "pxe|disk|cd|bios|http [-uri URL] [flags]", "set the boot device override (http: UEFI HTTP boot from -uri)", bootCmd},
	{"monitor", "[BMC URL ...] [-simulate N] [flags]", "live table of machines: Contactable and power (Ctrl-C quits)", monitorCmd},
}

// run dispatches to a command; it returns nil for -h.
func run(ctx context.Context, args []string, password string, out io.Writer) error {
	err := dispatch(ctx, args, password, out)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, password string, out io.Writer) error {
	if len(args) == 0 {
		usage(out)
		return errors.New("a command is required: " + commandNames() + " (-h for help)")
	}
	name := args[0]
	switch {
	case name == "-h" || name == "-help" || name == "--help" || name == "help":
		usage(out)
		return flag.ErrHelp
	case strings.HasPrefix(name, "-"):
		// The flags alone, as before commands existed: bmcjob -spec f.json.
		return runSpec(ctx, args, password, out)
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, args[1:], password, out)
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

// newFlagSet is a command's FlagSet: errors and -h print to out, and Parse
// returns flag.ErrHelp for -h.
func newFlagSet(name, synopsis string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("bmcjob "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: bmcjob %s %s\n\nflags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments (bmcjob boot http -uri URL -bmc ...), which
// flag.Parse alone stops at, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
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
