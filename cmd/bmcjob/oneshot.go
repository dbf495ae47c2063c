package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// powerOps are the arguments of "bmcjob power".
var powerOps = map[string]task.PowerOp{
	"on": task.PowerOn, "off": task.PowerOff, "soft-off": task.PowerSoftOff,
	"cycle": task.PowerCycle, "reset": task.PowerReset,
}

// powerCmd is "bmcjob power status|on|off|soft-off|cycle|reset": a
// one-task job. status reads the power state (one session, one read) and
// changes nothing.
func powerCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "status|on|off|soft-off|cycle|reset -bmc URL [flags]"
	fs := newFlagSet(e, "power", synopsis)
	tf := addTargetFlags(fs, 10*time.Minute)
	asJSON := fs.Bool("json", false, "print the job's final status as JSON")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("power: want one of status, on, off, soft-off, cycle, reset; got %q", strings.Join(pos, " "))
	}
	ts := task.Spec{}
	if op, ok := powerOps[pos[0]]; ok {
		ts.Power = &task.PowerAction{Op: op}
	} else if pos[0] == "status" {
		ts.PowerStatus = &task.PowerStatusAction{}
	} else {
		return fmt.Errorf("power: %q is not one of status, on, off, soft-off, cycle, reset", pos[0])
	}
	return oneShot(ctx, e, tf, ts, *asJSON)
}

// bootDevices are the arguments of "bmcjob boot".
var bootDevices = map[string]task.BootDevice{
	"pxe": task.BootPXE, "disk": task.BootDisk, "cd": task.BootCDROM, "cdrom": task.BootCDROM, "bios": task.BootBIOS,
	"http": task.BootHTTP,
}

// bootCmd is "bmcjob boot pxe|disk|cd|bios|http": a one-task job setting
// the boot override (once unless -persistent), read back where the BMC
// can. http is UEFI HTTP boot from -uri (Redfish BMCs that offer it; others
// fail with reason NotSupported).
func bootCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "pxe|disk|cd|bios|http -bmc URL [-uri URL] [-persistent] [-mode uefi|legacy] [flags]"
	fs := newFlagSet(e, "boot", synopsis)
	tf := addTargetFlags(fs, 10*time.Minute)
	persistent := fs.Bool("persistent", false, "keep the override for every boot (default: next boot only)")
	mode := fs.String("mode", "", "firmware boot mode: uefi or legacy (default: leave it)")
	uri := fs.String("uri", "", "with http: the http:// or https:// URL of the EFI program to boot (required)")
	asJSON := fs.Bool("json", false, "print the job's final status as JSON")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("boot: want one device of pxe, disk, cd, bios, http; got %q", strings.Join(pos, " "))
	}
	dev, ok := bootDevices[pos[0]]
	if !ok {
		return fmt.Errorf("boot: %q is not one of pxe, disk, cd, bios, http", pos[0])
	}
	if dev == task.BootHTTP && *uri == "" {
		return errors.New("boot http: -uri is required (the URL of the EFI program to boot)")
	}
	ts := task.Spec{BootDevice: &task.BootDeviceAction{Device: dev, Persistent: *persistent, Mode: task.BootMode(*mode), URI: *uri}}
	return oneShot(ctx, e, tf, ts, *asJSON)
}

// oneShot runs a job of the one task ts and prints its outcome on
// e.stdout: a line "<task>: <result>: <message>", or the status as JSON.
func oneShot(ctx context.Context, e *env, tf *targetFlags, ts task.Spec, asJSON bool) error {
	return runTasks(ctx, e, tf, asJSON, ts)
}

// runTasks runs a job of tasks (a one-shot command's) and prints a line
// "<task>: <result>: <message>" per task that ran, or the status as JSON.
func runTasks(ctx context.Context, e *env, tf *targetFlags, asJSON bool, tasks ...task.Spec) error {
	return runTasksNoted(ctx, e, tf, asJSON, nil, tasks...)
}

// runTasksNoted is runTasks with a note: when the job succeeded, the text
// output ends with the lines note returns for it (e.g. that a reboot must
// follow). -json has the same facts in the status, so no note is printed.
func runTasksNoted(ctx context.Context, e *env, tf *targetFlags, asJSON bool, note func(job.Job) string, tasks ...task.Spec) error {
	for i := range tasks {
		if err := tasks[i].Validate(); err != nil {
			return err
		}
	}
	if err := tf.checkBMC(); err != nil {
		return err
	}
	c, err := tf.open(e)
	if err != nil {
		return err
	}
	defer c.close()
	for i := range tasks {
		c.simulatedImage(&tasks[i])
	}
	spec := job.Spec{BMC: c.addr, Tasks: tasks}
	if err := spec.Validate(); err != nil {
		return err
	}
	j, err := runJob(ctx, e, c, spec, tf)
	if err != nil {
		return err
	}
	out := e.stdout
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(j.Status); err != nil {
			return err
		}
	} else {
		for i, st := range j.Status.Tasks {
			switch {
			case st.Result == "":
			case st.Result != conditions.ResultSucceeded && j.Status.Message != "" && strings.Contains(st.Message, j.Status.Message):
				// A task skipped because another failed: its message
				// repeats that failure, which has its own line.
				fmt.Fprintf(out, "%s: %s\n", tasks[i].Describe(), resultWord(st.Result, st.Reason))
			default:
				fmt.Fprintf(out, "%s: %s: %s\n", tasks[i].Describe(), resultWord(st.Result, st.Reason), st.Message)
			}
		}
		if note != nil && j.Status.Result == conditions.ResultSucceeded {
			if n := note(j); n != "" {
				fmt.Fprintln(out, n)
			}
		}
	}
	if j.Status.Result != conditions.ResultSucceeded {
		what := "job"
		if len(tasks) == 1 {
			what = tasks[0].Describe()
		}
		return &resultError{fmt.Sprintf("%s %s (%s): %s", what, j.Status.Result, j.Status.Reason, j.Status.Message)}
	}
	return nil
}

// resultWord is a result as the text output prints it: "Succeeded", or
// "Failed (Reason)".
func resultWord(r conditions.Result, reason string) string {
	if r == conditions.ResultSucceeded || reason == "" {
		return string(r)
	}
	return fmt.Sprintf("%s (%s)", r, reason)
}

// resultError is the error of a command whose job ran and did not
// succeed. Its result, message included, is already on standard output, so
// main exits 1 without printing it again: one message per failure.
type resultError struct{ msg string }

func (e *resultError) Error() string { return e.msg }
