package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// rebootNote is the line the text output of a change that waits for the
// next boot ends with.
const rebootNote = "reboot required: the change takes effect at the next boot (e.g. bmcjob power cycle)"

// securebootCmd is "bmcjob secureboot status|on|off|reset-keys KIND":
// status reads the Secure Boot state (bmc.SecureBootManager, changing
// nothing); the others run a one-task secureBoot job (docs/secure-boot-boot-order.md)
// and say when the change waits for a reboot.
func securebootCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "status|on|off|reset-keys KIND -bmc URL [flags]"
	fs := newFlagSet(e, "secureboot", synopsis)
	tf := addTargetFlags(fs, 5*time.Minute)
	asJSON := fs.Bool("json", false, "print JSON (status: the state; the others: the job's final status)")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	kinds := fmt.Sprint(bmc.SecureBootResetKinds())
	if len(pos) == 0 || (pos[0] == "reset-keys") != (len(pos) == 2) || len(pos) > 2 {
		fs.Usage()
		return fmt.Errorf("secureboot: want status, on, off or reset-keys KIND (KIND one of %s); got %q", kinds, strings.Join(pos, " "))
	}
	var a task.SecureBootAction
	switch pos[0] {
	case "status":
		return withDriver(ctx, e, tf, func(ctx context.Context, drv bmc.Driver) error {
			m, ok := drv.(bmc.SecureBootManager)
			if !ok {
				return fmt.Errorf("secureboot: the driver for this BMC cannot manage Secure Boot: %w", bmc.ErrNotSupported)
			}
			st, err := m.SecureBoot(ctx)
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(e.stdout, st)
			}
			return printSecureBoot(e, st)
		})
	case "on", "off":
		on := pos[0] == "on"
		a.Enabled = &on
	case "reset-keys":
		a.ResetKeys = bmc.SecureBootResetKeys(pos[1])
		if !a.ResetKeys.Valid() {
			return fmt.Errorf("secureboot reset-keys: %q is not one of %s", pos[1], kinds)
		}
	default:
		return fmt.Errorf("secureboot: %q is not one of status, on, off, reset-keys", pos[0])
	}
	return runTasksNoted(ctx, e, tf, *asJSON, func(j job.Job) string {
		if sb := j.Status.Tasks[0].SecureBoot; sb != nil && sb.RebootRequired {
			return rebootNote
		}
		return ""
	}, task.Spec{SecureBoot: &a})
}

func printSecureBoot(e *env, st bmc.SecureBootState) error {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "enabled:\t%t\n", st.Enabled)
	if st.Pending != nil {
		fmt.Fprintf(w, "next boot:\t%t (reboot required)\n", *st.Pending)
	}
	fmt.Fprintf(w, "current boot:\t%s\n", word(string(st.CurrentBoot)))
	fmt.Fprintf(w, "mode:\t%s\n", word(string(st.Mode)))
	keys := make([]string, len(st.ResetKeys))
	for i, k := range st.ResetKeys {
		keys[i] = string(k)
	}
	fmt.Fprintf(w, "key resets:\t%s\n", word(strings.Join(keys, ", ")))
	return w.Flush()
}
