package bmc

import (
	"context"
	"errors"
)

// CredentialsStore is a [CredentialsResolver] that can also hold, per
// reference, one *pending* set of credentials: the new credentials of a
// rotation that is under way (the job package's rotateCredentials task,
// docs/credential-rotation.md). A rotation stores the new credentials as
// pending before it changes the BMC and promotes them to current only once
// a login with them worked, so that the BMC accepts, at every point, the
// current or the pending credentials of the store.
//
// Every method must be safe for concurrent use, and its errors must not
// contain a password.
type CredentialsStore interface {
	CredentialsResolver
	// Pending returns the pending credentials of ref, and whether there
	// are any. It changes nothing.
	Pending(ctx context.Context, ref string) (Credentials, bool, error)
	// SetPending stores c as the pending credentials of ref, replacing any
	// pending set. It returns once c is durable: a crash afterwards still
	// finds it. The current credentials stay as they are.
	SetPending(ctx context.Context, ref string, c Credentials) error
	// Promote makes c the current credentials of ref if they are the
	// pending ones, and drops the pending set, in one durable change.
	// Idempotent: when c are the current credentials already and nothing
	// is pending, it returns nil. Otherwise it changes nothing and returns
	// an error wrapping ErrPendingMismatch.
	Promote(ctx context.Context, ref string, c Credentials) error
	// DropPending drops the pending credentials of ref if they are c.
	// Idempotent: nothing pending is nil. Other pending credentials are
	// kept, with an error wrapping ErrPendingMismatch.
	DropPending(ctx context.Context, ref string, c Credentials) error
}

// ErrPendingMismatch reports that [CredentialsStore.Promote] or
// [CredentialsStore.DropPending] was given credentials that are not the
// pending ones (another rotation replaced them). Permanent.
var ErrPendingMismatch = errors.New("the credentials are not the pending ones of the reference")

// TryPending calls try with cur, the current credentials of ref that r
// resolved. When try fails with an error wrapping [ErrUnauthorized] and r
// is a [CredentialsStore] holding pending credentials for ref (other than
// cur), it calls try once more with those: a BMC found between the change
// of a rotation and its promotion (a crash there, or a rotation in another
// process) accepts only them. It returns the credentials try last used,
// whether they are the pending ones, and try's error (the first one when
// the pending credentials were not tried).
//
// It is the one place where bmckit falls back to pending credentials: the
// job package's dial and the monitor's reads go through it. It tries the
// pending set only after the current one was refused, so a BMC that locks
// accounts after failed logins sees at most one failed login per call.
func TryPending(ctx context.Context, r CredentialsResolver, ref string, cur Credentials, try func(Credentials) error) (used Credentials, pending bool, err error) {
	err = try(cur)
	if err == nil || !errors.Is(err, ErrUnauthorized) {
		return cur, false, err
	}
	cs, ok := r.(CredentialsStore)
	if !ok {
		return cur, false, err
	}
	p, has, perr := cs.Pending(ctx, ref)
	if perr != nil || !has || p == cur {
		return cur, false, err
	}
	if perr := try(p); perr != nil {
		return p, true, perr
	}
	return p, true, nil
}
