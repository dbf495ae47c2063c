package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

// addCredentialsFlags adds -credentials-file and -credentials-ref to a
// command that talks to one BMC. Every such command takes them, so that
// after "bmcjob rotate" the other commands log in with what the rotation
// stored (the password is then nowhere else).
func addCredentialsFlags(fs *flag.FlagSet, t *targetFlags) {
	fs.StringVar(&t.credsFile, "credentials-file", "", "JSON credentials file (bmc.FileCredentials, mode 0600) to read the BMC's credentials from; rotate stores the new ones there")
	fs.StringVar(&t.credsRef, "credentials-ref", "", "the BMC's entry in -credentials-file (default: the -bmc address as given)")
}

// useCredentialsFile makes -credentials-file the job's credentials store:
// the entry -credentials-ref (default: the BMC address) gives the
// credentials, and a rotation's pending credentials go there too.
//
// The file's entry wins over -user and $BMC_PASSWORD; giving either with a
// value that differs from the entry is an error rather than a silent
// choice. An entry that is not there is enrolled from -user and
// $BMC_PASSWORD (the first run, with the factory password). With
// -simulate the simulated BMC is new on every run, so its credentials
// replace the entry.
func (t *targetFlags) useCredentialsFile(e *env, c *conn) error {
	// FileCredentials does no I/O that a context could cancel.
	ctx := context.Background()
	store, err := bmc.OpenFileCredentials(t.credsFile)
	if err != nil {
		return fmt.Errorf("-credentials-file: %w", err)
	}
	ref := t.credsRef
	if ref == "" {
		ref = c.addr
	}
	if ref == "" {
		return errors.New("-credentials-ref is required when -bmc is not given: the entry of -credentials-file that holds the BMC's credentials")
	}
	c.resolver, c.ref = store, ref
	if t.simulate {
		if err := store.Set(ctx, ref, c.creds); err != nil {
			return fmt.Errorf("-credentials-file: %w", err)
		}
		fmt.Fprintf(e.stderr, "the simulated BMC's credentials are in %s as %q\n", store.Path(), ref)
		return nil
	}
	cur, err := store.Resolve(ctx, ref)
	switch {
	case err == nil && t.userGiven() && t.user != cur.Username:
		return fmt.Errorf("-user %q: -credentials-file %s holds user %q for %q: drop -user (the file's credentials are used)", t.user, store.Path(), cur.Username, ref)
	case err == nil && e.password != "" && e.password != cur.Password:
		return fmt.Errorf("$BMC_PASSWORD is set and differs from the password -credentials-file %s holds for %q: unset it (the file's credentials are used)", store.Path(), ref)
	case err == nil:
		c.creds, c.missing = cur, nil
		return nil
	case c.missing != nil:
		return fmt.Errorf("-credentials-file: %w; to store them there, pass -user and set $BMC_PASSWORD once", err)
	}
	if err := store.Set(ctx, ref, c.creds); err != nil {
		return fmt.Errorf("-credentials-file: %w", err)
	}
	fmt.Fprintf(e.stderr, "stored the credentials of user %q in %s as %q\n", c.creds.Username, store.Path(), ref)
	return nil
}

// dialWithFallback dials ep with c's credentials; when the BMC refuses
// them and -credentials-file holds a rotation's pending credentials, it
// dials once more with those (bmc.PendingFallback, as a job's dial does),
// so a read during an interrupted rotation still works.
func (c *conn) dialWithFallback(ctx context.Context, ep bmc.Endpoint) (bmc.Driver, error) {
	var drv bmc.Driver
	var fb bmc.PendingFallback
	_, _, err := fb.Try(ctx, c.resolver, c.ref, c.creds, func(cr bmc.Credentials) error {
		d, err := c.dialer.Dial(ctx, ep, cr)
		if err == nil {
			drv = d
		}
		return err
	})
	return drv, err
}
