package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bmckit/bmckit/task"
)

// inventoryCmd is "bmcjob inventory": a one-task job reading the system's
// hardware inventory (an inventory task). The result line counts what was
// found; -json prints the job's status, the inventory in its task.
func inventoryCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "-bmc URL [flags]"
	fs := newFlagSet(e, "inventory", synopsis)
	tf := addTargetFlags(fs, 10*time.Minute)
	asJSON := fs.Bool("json", false, "print the job's final status as JSON (the inventory is in tasks[0].inventory)")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return fmt.Errorf("inventory: takes no arguments; got %q", strings.Join(pos, " "))
	}
	return oneShot(ctx, e, tf, task.Spec{Inventory: &task.InventoryAction{}}, *asJSON)
}

// biosCmd is "bmcjob bios get" (read the attributes) and "bmcjob bios set
// NAME=VALUE ..." (a bios task: checked against the BMC's registry first,
// then requested; on a BMC that applies them at the next boot they stay
// pending, and -reboot adds the power cycle and the verification), and
// "bmcjob bios verify NAME=VALUE ...".
func biosCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "get | set NAME=VALUE... [-reboot] | verify NAME=VALUE... -bmc URL [flags]"
	fs := newFlagSet(e, "bios", synopsis)
	tf := addTargetFlags(fs, 20*time.Minute)
	reboot := fs.Bool("reboot", false, "with set: power-cycle the system and verify when the BMC applies the values at the next boot")
	asJSON := fs.Bool("json", false, "print the job's final status as JSON")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return fmt.Errorf("bios: want get, set or verify")
	}
	attrs := map[string]string{}
	for _, a := range pos[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return fmt.Errorf("bios %s: %q: want NAME=VALUE", pos[0], a)
		}
		attrs[name] = value
	}
	switch pos[0] {
	case "get":
		if len(attrs) > 0 {
			return fmt.Errorf("bios get: takes no attributes")
		}
		return oneShot(ctx, e, tf, task.Spec{BIOS: &task.BIOSAction{}}, *asJSON)
	case "verify":
		if len(attrs) == 0 {
			return fmt.Errorf("bios verify: name at least one NAME=VALUE")
		}
		return oneShot(ctx, e, tf, task.Spec{BIOS: &task.BIOSAction{Attributes: attrs, VerifyOnly: true}}, *asJSON)
	case "set":
		if len(attrs) == 0 {
			return fmt.Errorf("bios set: name at least one NAME=VALUE")
		}
		set := task.Spec{BIOS: &task.BIOSAction{Attributes: attrs}}
		if !*reboot {
			return oneShot(ctx, e, tf, set, *asJSON)
		}
		return runTasks(ctx, e, tf, *asJSON, set,
			task.Spec{Power: &task.PowerAction{Op: task.PowerCycle}},
			task.Spec{BIOS: &task.BIOSAction{Attributes: attrs, VerifyOnly: true}})
	}
	names := []string{"get", "set", "verify"}
	sort.Strings(names)
	return fmt.Errorf("bios: %q is not one of %s", pos[0], strings.Join(names, ", "))
}
