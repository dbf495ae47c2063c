package bmc

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
)

// Helpers of a credential rotation (the job package's rotateCredentials
// kind, docs/credential-rotation.md), for hosts that write their own too.

// WithSession dials a new session on ep with c, calls f with it, and closes
// it. The session is not pooled: a rotation proves new credentials on a
// login of their own, which a session opened before the change cannot.
func WithSession(ctx context.Context, d Dialer, ep Endpoint, c Credentials, f func(Driver) error) error {
	drv, err := d.Dial(ctx, ep, c)
	if err != nil {
		return err
	}
	defer drv.Close(context.WithoutCancel(ctx))
	return f(drv)
}

// Accepts reports whether the BMC takes c: a new session lists the
// accounts ([AccountManager]). A refusal (an error wrapping
// [ErrUnauthorized], at the login or at the read) is false with no error;
// other errors are returned.
func Accepts(ctx context.Context, d Dialer, ep Endpoint, c Credentials) (bool, error) {
	err := WithSession(ctx, d, ep, c, func(drv Driver) error {
		am, ok := drv.(AccountManager)
		if !ok {
			return &OpError{Op: "list accounts", Endpoint: ep.String(), Err: ErrNotSupported}
		}
		_, err := am.Accounts(ctx)
		return err
	})
	if errors.Is(err, ErrUnauthorized) {
		return false, nil
	}
	return err == nil, err
}

var generationSuffix = regexp.MustCompile(`-([0-9]+)$`)

// NextUserName is the user name of a blue/green rotation's new account:
// name with its generation suffix counted up ("admin" gives "admin-2",
// "admin-2" gives "admin-3"), past the names accounts already use.
func NextUserName(name string, accounts []Account) string {
	n := 2
	if m := generationSuffix.FindStringSubmatch(name); m != nil {
		if g, err := strconv.Atoi(m[1]); err == nil {
			name, n = name[:len(name)-len(m[0])], g+1
		}
	}
	for ; ; n++ {
		c := name + "-" + strconv.Itoa(n)
		if !slices.ContainsFunc(accounts, func(a Account) bool { return a.UserName == c }) {
			return c
		}
	}
}
