package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/task"
)

// nmiCmd is "bmcjob nmi": a one-task nmi job (docs/indicator-nmi.md): the
// host gets a diagnostic interrupt, which makes a hung operating system
// write a crash dump. Nothing to read back: it succeeds when the BMC
// accepted the request.
func nmiCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "nmi", "-bmc URL [flags]")
	tf := addTargetFlags(fs, 2*time.Minute)
	asJSON := fs.Bool("json", false, "print the job's final status as JSON")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return fmt.Errorf("nmi: takes no arguments; got %q", strings.Join(pos, " "))
	}
	return oneShot(ctx, e, tf, task.Spec{NMI: &task.NMIAction{}}, *asJSON)
}
