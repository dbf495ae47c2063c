package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/task"
)

// healthCmd is "bmcjob health": one read of the health the BMC reports for
// the system, its chassis and its manager (bmc.HealthReader; on Redfish one
// GET each), changing nothing.
func healthCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "health", "-bmc URL [flags]")
	tf := addTargetFlags(fs, time.Minute)
	asJSON := fs.Bool("json", false, "print the health report as JSON")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fs.Usage()
		return fmt.Errorf("health: takes no arguments; got %q", strings.Join(pos, " "))
	}
	return withDriver(ctx, e, tf, func(ctx context.Context, drv bmc.Driver) error {
		hr, ok := drv.(bmc.HealthReader)
		if !ok {
			return fmt.Errorf("health: the driver for this BMC cannot read health: %w", bmc.ErrNotSupported)
		}
		r, err := hr.Health(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, r)
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "RESOURCE\tHEALTH\tROLLUP\tFAULTS")
		line := func(kind string, h bmc.ResourceHealth) {
			fmt.Fprintf(w, "%s %s\t%s\t%s\t%s\n", kind, h.ID, word(string(h.Health)), word(string(h.Rollup)), strings.Join(h.Faults, "; "))
		}
		line("system", r.System)
		for _, c := range r.Chassis {
			line("chassis", c)
		}
		for _, m := range r.Managers {
			line("manager", m)
		}
		return w.Flush()
	})
}

// logCmd is "bmcjob log list [SCOPE/ID]" (the logs, or one log's entries,
// newest first: reads only) and "bmcjob log clear SCOPE/ID" (a clearLog
// task: the entries are read and kept in the job's status before the
// clear; -json prints them).
func logCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "log", "list [SCOPE/ID] | clear SCOPE/ID -bmc URL [flags]")
	tf := addTargetFlags(fs, 2*time.Minute)
	limit := fs.Int("limit", bmc.DefaultLogLimit, "list: the most entries to print (at most 1000)")
	maxEntries := fs.Int("max-entries", 0, "clear: the most entries to keep in the job's status (default 1000)")
	asJSON := fs.Bool("json", false, "print JSON (list: the logs or the page; clear: the job's final status, the entries in tasks[0].clearLog)")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 || (pos[0] == "clear" && len(pos) != 2) {
		fs.Usage()
		return errors.New("log: want list [SCOPE/ID] or clear SCOPE/ID (e.g. system/SEL; bmcjob log list shows them)")
	}
	var ref bmc.LogRef
	if len(pos) == 2 {
		if ref, err = parseLogRef(pos[1]); err != nil {
			return err
		}
	}
	switch pos[0] {
	case "clear":
		return oneShot(ctx, e, tf, task.Spec{ClearLog: &task.ClearLogAction{Log: ref, MaxEntries: *maxEntries}}, *asJSON)
	case "list":
	default:
		return fmt.Errorf("log: %q is not one of list, clear", pos[0])
	}
	q := bmc.LogQuery{Limit: *limit}
	if err := q.Validate(); err != nil {
		return fmt.Errorf("-limit: %w", err)
	}
	return withDriver(ctx, e, tf, func(ctx context.Context, drv bmc.Driver) error {
		lr, ok := drv.(bmc.EventLogReader)
		if !ok {
			return fmt.Errorf("log: the driver for this BMC cannot read event logs: %w", bmc.ErrNotSupported)
		}
		if ref.ID == "" {
			logs, err := lr.LogServices(ctx)
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(e.stdout, logs)
			}
			return printLogs(e.stdout, logs)
		}
		p, err := lr.LogEntries(ctx, ref, q)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, p)
		}
		return printEntries(e.stdout, p)
	})
}

// parseLogRef parses "system/SEL".
func parseLogRef(s string) (bmc.LogRef, error) {
	scope, id, _ := strings.Cut(s, "/")
	ref := bmc.LogRef{Scope: bmc.LogScope(scope), ID: id}
	if err := ref.Validate(); err != nil {
		return ref, fmt.Errorf("log %q: want SCOPE/ID such as system/SEL or manager/Log1: %w", s, err)
	}
	return ref, nil
}

func printLogs(out io.Writer, logs []bmc.LogService) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "LOG\tNAME\tTYPE\tCLEARABLE\tMAX")
	for _, l := range logs {
		max := "-"
		if l.MaxEntries > 0 {
			max = strconv.Itoa(l.MaxEntries)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\n", l.LogRef, l.Name, word(l.EntryType), l.Clearable, max)
	}
	return w.Flush()
}

func printEntries(out io.Writer, p bmc.LogPage) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tCREATED\tSEVERITY\tMESSAGE ID\tMESSAGE")
	for _, en := range p.Entries {
		created := "-"
		if !en.Created.IsZero() {
			created = en.Created.Format(time.RFC3339)
		}
		msg := en.Message
		if en.Resolved {
			msg += " (resolved)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", en.ID, created, word(string(en.Severity)), word(en.MessageID), msg)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if p.Next != "" {
		fmt.Fprintf(out, "(older entries follow: -limit to see more)\n")
	}
	if p.Truncated {
		fmt.Fprintf(out, "(the log is longer than a driver reads: the oldest are not listed)\n")
	}
	return nil
}

// word is s, or "-" when the BMC did not say.
func word(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// withDriver checks -bmc and the credentials, dials the BMC (or the
// simulated one), runs f within -timeout, and logs out.
func withDriver(ctx context.Context, e *env, tf *targetFlags, f func(context.Context, bmc.Driver) error) error {
	if err := tf.checkBMC(); err != nil {
		return err
	}
	c, err := tf.open(e)
	if err != nil {
		return err
	}
	defer c.close()
	if c.missing != nil {
		return c.missing
	}
	ep, err := bmc.ParseEndpoint(c.addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, tf.timeout)
	defer cancel()
	drv, err := c.dialWithFallback(ctx, ep)
	if err != nil {
		return err
	}
	defer func() { _ = drv.Close(context.WithoutCancel(ctx)) }()
	return f(ctx, drv)
}
