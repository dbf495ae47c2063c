package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// refList is a flag of boot option references: comma-separated, and
// repeatable (-enable Boot0001 -enable Boot0002 is -enable Boot0001,Boot0002).
type refList []string

func (l *refList) String() string { return strings.Join(*l, ",") }

func (l *refList) Set(s string) error {
	for _, r := range strings.Split(s, ",") {
		if r = strings.TrimSpace(r); r == "" {
			return fmt.Errorf("%q: want boot option references such as Boot0001, comma-separated", s)
		}
		if slices.Contains(*l, r) {
			return fmt.Errorf("%q is given twice", r)
		}
		*l = append(*l, r)
	}
	return nil
}

// bootorderCmd is "bmcjob bootorder status|set": status reads the
// persistent boot order, the boot options and the HTTP boot URI
// (bmc.BootOrderManager, changing nothing); set runs a one-task bootOrder
// job (docs/secure-boot-boot-order.md) and says when the change waits for
// a reboot.
func bootorderCmd(ctx context.Context, e *env, args []string) error {
	const synopsis = "status | set [-order REF,REF...] [-enable REF] [-disable REF] [-http-boot-uri URL] -bmc URL [flags]"
	fs := newFlagSet(e, "bootorder", synopsis)
	tf := addTargetFlags(fs, 5*time.Minute)
	var order, enable, disable refList
	fs.Var(&order, "order", "set: the boot option references to boot first, in order (e.g. Boot0002,Boot0001); the others follow in their order")
	fs.Var(&enable, "enable", "set: enable these boot options (comma-separated or repeated)")
	fs.Var(&disable, "disable", "set: disable these boot options (comma-separated or repeated)")
	uri := fs.String("http-boot-uri", "", "set: the UEFI HTTP boot URI (an http:// or https:// URL)")
	asJSON := fs.Bool("json", false, "print JSON (status: the boot order; set: the job's final status)")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("bootorder: want status or set; got %q", strings.Join(pos, " "))
	}
	switch pos[0] {
	case "status":
		return withDriver(ctx, e, tf, func(ctx context.Context, drv bmc.Driver) error {
			m, ok := drv.(bmc.BootOrderManager)
			if !ok {
				return fmt.Errorf("bootorder: the driver for this BMC cannot manage the boot order: %w", bmc.ErrNotSupported)
			}
			b, err := m.BootOrder(ctx)
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(e.stdout, b)
			}
			return printBootOrder(e, b)
		})
	case "set":
	default:
		return fmt.Errorf("bootorder: %q is not one of status, set", pos[0])
	}
	a := task.BootOrderAction{Order: order, HTTPBootURI: *uri}
	for _, r := range enable {
		if slices.Contains(disable, r) {
			return fmt.Errorf("-enable and -disable both name %q", r)
		}
	}
	if len(enable)+len(disable) > 0 {
		a.Enabled = map[string]bool{}
		for _, r := range enable {
			a.Enabled[r] = true
		}
		for _, r := range disable {
			a.Enabled[r] = false
		}
	}
	if *uri != "" {
		if u, err := url.Parse(*uri); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("-http-boot-uri %q: want an absolute http:// or https:// URL", *uri)
		}
	}
	if a.Change().IsZero() {
		return fmt.Errorf("bootorder set: give -order, -enable, -disable or -http-boot-uri")
	}
	// The references are checked against the BMC's own options before
	// anything is sent (the job's preflight).
	return runTasksNoted(ctx, e, tf, *asJSON, func(j job.Job) string {
		if bo := j.Status.Tasks[0].BootOrder; bo != nil && bo.RebootRequired {
			return rebootNote
		}
		return ""
	}, task.Spec{BootOrder: &a})
}

func printBootOrder(e *env, b bmc.BootOrder) error {
	fmt.Fprintf(e.stdout, "order: %s\n", word(strings.Join(b.Order, ",")))
	if b.PendingOrder != nil {
		fmt.Fprintf(e.stdout, "next boot: %s (reboot required)\n", strings.Join(b.PendingOrder, ","))
	}
	if b.HTTPBootURI != nil {
		fmt.Fprintf(e.stdout, "http boot uri: %s\n", word(*b.HTTPBootURI))
	}
	if b.PendingHTTPBootURI != nil {
		fmt.Fprintf(e.stdout, "http boot uri at next boot: %s (reboot required)\n", word(*b.PendingHTTPBootURI))
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "OPTION\tENABLED\tALIAS\tNAME")
	for _, o := range b.Options {
		enabled := fmt.Sprint(o.Enabled)
		if o.PendingEnabled != nil {
			enabled += fmt.Sprintf(" (next boot: %t)", *o.PendingEnabled)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", o.Reference, enabled, word(o.Alias), word(o.DisplayName))
	}
	return w.Flush()
}
