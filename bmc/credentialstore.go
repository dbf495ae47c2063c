package bmc

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// CredentialsPair is what a [CredentialsStore] holds for one reference,
// with the rules every store applies to it: the in-tree stores use it, and
// so can a host's own (a vault's), so that all agree on what SetPending,
// Promote and DropPending do. ref names the reference in errors; errors
// never carry a password.
type CredentialsPair struct {
	Current Credentials
	Pending *Credentials
}

// SetPending makes c the pending credentials, replacing any; an empty user
// name or password is refused.
func (p *CredentialsPair) SetPending(ref string, c Credentials) error {
	if c.Username == "" || c.Password == "" {
		return fmt.Errorf("pending credentials of %q: the user name and the password must not be empty", ref)
	}
	p.Pending = &c
	return nil
}

// Promote makes c current if they are the pending ones (changed), is a
// no-op if they are current and nothing is pending, and otherwise fails
// with ErrPendingMismatch.
func (p *CredentialsPair) Promote(ref string, c Credentials) (changed bool, err error) {
	switch {
	case p.Pending != nil && *p.Pending == c:
		p.Current, p.Pending = c, nil
		return true, nil
	case p.Pending == nil && p.Current == c:
		return false, nil
	}
	return false, fmt.Errorf("promoting credentials of %q (user %q): %w", ref, c.Username, ErrPendingMismatch)
}

// DropPending drops the pending credentials if they are c (changed); no
// pending is a no-op; other pending credentials fail with
// ErrPendingMismatch.
func (p *CredentialsPair) DropPending(ref string, c Credentials) (changed bool, err error) {
	switch {
	case p.Pending == nil:
		return false, nil
	case *p.Pending == c:
		p.Pending = nil
		return true, nil
	}
	return false, fmt.Errorf("dropping the pending credentials of %q (user %q): %w", ref, c.Username, ErrPendingMismatch)
}

// PendingFallback dials with the pending credentials of a
// [CredentialsStore] when the current ones are refused: a BMC found
// between the change of a rotation and its promotion (a crash there, or a
// rotation in another process) accepts only the pending ones. It is the one
// place where bmckit does this: the job package's dial and the monitor's
// reads go through it (each holds one).
//
// It remembers, per reference, pending credentials that worked, and tries
// them first while they stay pending: a BMC that locks an account after a
// few failed logins sees one failed login per rotation it is found in, not
// one per dial. The zero value is ready; safe for concurrent use.
type PendingFallback struct {
	mu     sync.Mutex
	worked map[string]Credentials // ref: pending credentials that were accepted
}

// Try calls try with credentials of ref: cur (the current credentials r
// resolved), or the pending ones of r when r is a CredentialsStore that
// holds them and either they worked last time or try refused cur with an
// error wrapping [ErrUnauthorized]. It returns the credentials try last
// used, whether they are the pending ones, and try's last error. It never
// tries the same credentials twice, nor the pending ones more than once.
func (f *PendingFallback) Try(ctx context.Context, r CredentialsResolver, ref string, cur Credentials, try func(Credentials) error) (used Credentials, pending bool, err error) {
	cs, isStore := r.(CredentialsStore)
	if !isStore {
		return cur, false, try(cur)
	}
	if p, ok := f.remembered(ref); ok {
		if pend, has, perr := cs.Pending(ctx, ref); perr == nil && has && pend == p && pend != cur {
			err = try(pend)
			if err == nil || !errors.Is(err, ErrUnauthorized) {
				return pend, true, err
			}
		}
		f.forget(ref)
		if err != nil { // the pending ones were refused: the current ones, once
			return cur, false, try(cur)
		}
	}
	err = try(cur)
	if err == nil || !errors.Is(err, ErrUnauthorized) {
		return cur, false, err
	}
	pend, has, perr := cs.Pending(ctx, ref)
	if perr != nil || !has || pend == cur {
		return cur, false, err
	}
	if err := try(pend); err != nil {
		return pend, true, err
	}
	f.remember(ref, pend)
	return pend, true, nil
}

func (f *PendingFallback) remembered(ref string) (Credentials, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.worked[ref]
	return c, ok
}

func (f *PendingFallback) remember(ref string, c Credentials) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.worked == nil {
		f.worked = map[string]Credentials{}
	}
	f.worked[ref] = c
}

func (f *PendingFallback) forget(ref string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.worked, ref)
}
