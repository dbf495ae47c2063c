package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/task"
)

// firmwareCmd is "bmcjob firmware update": a one-task job installing a
// firmware image (a firmwareUpdate task, docs/firmware.md): the BMC
// fetches -image, the task follows the BMC's update task, resets what the
// BMC asks for (unless -reset none) and succeeds once -component reports
// -version. With -simulate, the simulated BMC installs an image served
// in-process (-image is then not needed, and ignored): its update takes a
// few seconds and takes effect at the system's next boot, so the task
// power-cycles the system.
func firmwareCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "update -image URL -component ID -version V -bmc URL [-reset auto|none] [flags]"
	fs := newFlagSet(e, "firmware", synopsis)
	tf := addTargetFlags(fs, 90*time.Minute)
	image := fs.String("image", "", "the http:// or https:// URL the BMC fetches the image from")
	component := fs.String("component", "", "the firmware inventory ID the image updates (e.g. BIOS, BMC): its version verifies the update")
	version := fs.String("version", "", "the component's version once the update took effect")
	reset := fs.String("reset", "auto", "auto: do the reset the BMC asks for; none: fail with ResetRequired instead")
	asJSON := fs.Bool("json", false, "print the job's final status as JSON")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "update" {
		fs.Usage()
		return fmt.Errorf("firmware: want update; got %q", strings.Join(pos, " "))
	}
	if tf.simulate {
		if *component == "" || *version == "" {
			return errors.New("firmware update -simulate: -component and -version are required (the simulated BMC has BMC and BIOS at 1.0.0)")
		}
		*image = "http://simulated.invalid/" // replaced once the simulator runs
	}
	ts := task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: *image, Component: *component, Version: *version, Reset: task.FirmwareReset(*reset)}}
	if err := ts.Validate(); err != nil {
		return err
	}
	return oneShot(ctx, e, tf, ts, *asJSON)
}
