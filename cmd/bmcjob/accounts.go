package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// accountsCmd is "bmcjob accounts list": the BMC's local accounts
// (bmc.AccountManager.Accounts), changing nothing. An account carries no
// password (bmc.Account has no field for one), so none can be printed.
// Creating, changing and deleting accounts is left to the library: at a
// terminal, "bmcjob rotate" is the safe way to change a password.
func accountsCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "accounts", "list -bmc URL [flags]")
	tf := addTargetFlags(fs, time.Minute)
	asJSON := fs.Bool("json", false, "print the accounts as JSON")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "list" {
		fs.Usage()
		return fmt.Errorf("accounts: want list; got %q", strings.Join(pos, " "))
	}
	return withDriver(ctx, e, tf, func(ctx context.Context, drv bmc.Driver) error {
		am, ok := drv.(bmc.AccountManager)
		if !ok {
			return fmt.Errorf("accounts: the driver for this BMC cannot manage accounts: %w", bmc.ErrNotSupported)
		}
		accounts, err := am.Accounts(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			if accounts == nil {
				accounts = []bmc.Account{}
			}
			return printJSON(e.stdout, accounts)
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tUSER\tROLE\tENABLED\tLOCKED")
		for _, a := range accounts {
			fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%t\n", a.ID, a.UserName, word(string(a.Role)), a.Enabled, a.Locked)
		}
		return w.Flush()
	})
}
