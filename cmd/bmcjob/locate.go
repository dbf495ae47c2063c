package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/task"
)

// ledStates are the arguments of "bmcjob locate".
var ledStates = map[string]task.LEDState{"on": task.LEDOn, "off": task.LEDOff, "blink": task.LEDBlinking}

// locateCmd is "bmcjob locate on|off|blink": a one-task locatorLED job
// (docs/indicator-nmi.md), read back where the BMC shows the LED. A
// command rather than a spec, as power and boot are: bmcjob runs one-task
// jobs as commands, and keeps specs (specs/locate.json) for jobs to edit
// and combine.
func locateCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "locate", "on|off|blink -bmc URL [flags]")
	tf := addTargetFlags(fs, 2*time.Minute)
	asJSON := fs.Bool("json", false, "print the job's final status as JSON")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("locate: want one of on, off, blink; got %q", strings.Join(pos, " "))
	}
	st, ok := ledStates[pos[0]]
	if !ok {
		return fmt.Errorf("locate: %q is not one of on, off, blink", pos[0])
	}
	return oneShot(ctx, e, tf, task.Spec{LocatorLED: &task.LocatorLEDAction{State: st}}, *asJSON)
}
