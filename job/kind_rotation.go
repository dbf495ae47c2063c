package job

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("rotateCredentials", func(s *task.Spec) kind { return rotationKind{s.RotateCredentials} })
}

// rotationKind rotates the job's credentials (docs/credential-rotation.md):
// prepare stores new credentials as pending in the bmc.CredentialsStore
// and the stage ChangeSent with the job; send changes the password (or
// creates the new account); notYet proves them on a new session, promotes
// them, and in account mode deletes the old account, each stage stored
// before what follows it. Resumed at ChangeSent, prepare asks the BMC
// which credentials it takes before sending anything. No password ever
// goes into the status, a message or a log line.
type rotationKind struct{ a *task.RotateCredentialsAction }

func (k rotationKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k rotationKind) usesBMC() bool                              { return true }
func (k rotationKind) recheckable() bool                          { return true }

func (k rotationKind) status(t *taskView) *task.RotationStatus {
	if t.status.Rotation == nil {
		t.status.Rotation = &task.RotationStatus{}
	}
	return t.status.Rotation
}

// needs is the account manager and the credentials store, or NotSupported.
func (k rotationKind) needs(t *taskView) (bmc.AccountManager, bmc.CredentialsStore, error) {
	am, ok := t.BMC.(bmc.AccountManager)
	if !ok {
		return nil, nil, notSupported(t.ep, "manage accounts")
	}
	cs, ok := t.cfg.credentials.(bmc.CredentialsStore)
	if !ok {
		return nil, nil, &bmc.OpError{Op: "rotate credentials", Endpoint: t.ep.String(), Err: fmt.Errorf(
			"the job's credentials resolver (%T) cannot hold pending credentials: give the Stepper a bmc.CredentialsStore: %w", t.cfg.credentials, bmc.ErrNotSupported)}
	}
	return am, cs, nil
}

// preflight: accounts and a store; the policy read proves the BMC has them.
func (k rotationKind) preflight(ctx context.Context, t *taskView) error {
	am, _, err := k.needs(t)
	if err == nil {
		_, err = am.PasswordPolicy(ctx)
	}
	return err
}

func (k rotationKind) prepare(ctx context.Context, t *taskView) (prep, error) {
	am, cs, err := k.needs(t)
	if err != nil {
		return prep{}, err
	}
	st, ref := k.status(t), t.job.Spec.CredentialsRef
	switch st.Stage {
	case "", task.RotationPending:
	case task.RotationChangeSent:
		// Resumed: the change may have reached the BMC. Which credentials
		// does it take? Pending first (the change landed), then current.
		pend, has, err := cs.Pending(ctx, ref)
		if err != nil {
			return prep{}, err
		}
		if has {
			if ok, err := k.accepts(ctx, t, pend); ok || err != nil {
				return prep{skip: ok}, err // landed: prove and promote
			}
		}
		cur, err := cs.Resolve(ctx, ref)
		if err != nil {
			return prep{}, err
		}
		if ok, err := k.accepts(ctx, t, cur); err != nil || !ok {
			return prep{}, k.neither(t, err)
		}
		if has {
			return prep{}, nil // not landed: send it again
		}
		st.Stage = "" // the pending set was dropped: start again
	default:
		return prep{skip: true}, nil // proven or later: notYet goes on
	}
	cur, err := cs.Resolve(ctx, ref)
	if err != nil {
		return prep{}, err
	}
	accts, err := am.Accounts(ctx)
	if err != nil {
		return prep{}, err
	}
	i := slices.IndexFunc(accts, func(a bmc.Account) bool { return a.UserName == cur.Username })
	if i < 0 {
		return prep{}, &taskFailure{conditions.ReasonInvalidSpec, fmt.Sprintf("the BMC lists no account %q, the user the job logs in with", cur.Username)}
	}
	pend, has, err := cs.Pending(ctx, ref)
	if err != nil {
		return prep{}, err
	}
	if !has {
		if pend, err = k.generate(ctx, am, cur.Username, accts); err != nil {
			return prep{}, err
		}
		if err := cs.SetPending(ctx, ref, pend); err != nil {
			return prep{}, err
		}
		t.log.Info("new credentials stored as pending", "task", t.Task+1, "user", pend.Username)
	}
	password := k.a.RotationModeOrDefault() == task.RotationPassword
	if password != (pend.Username == cur.Username) {
		return prep{}, &taskFailure{conditions.ReasonInvalidSpec, fmt.Sprintf("the pending credentials name user %q, which mode %s cannot give (the current user is %q): drop them from the credentials store", pend.Username, k.a.RotationModeOrDefault(), cur.Username)}
	}
	*st = task.RotationStatus{Stage: task.RotationChangeSent, UserName: pend.Username, OldUserName: cur.Username, OldAccountID: accts[i].ID}
	return prep{store: true}, nil
}

// generate makes new credentials to the BMC's policy.
func (k rotationKind) generate(ctx context.Context, am bmc.AccountManager, cur string, accts []bmc.Account) (bmc.Credentials, error) {
	p, err := am.PasswordPolicy(ctx)
	if err != nil {
		return bmc.Credentials{}, err
	}
	user := cur
	pw, err := bmc.GeneratePassword(p)
	if err != nil {
		return bmc.Credentials{}, &taskFailure{conditions.ReasonNotSupported, "the BMC's password policy: " + err.Error()}
	}
	if k.a.RotationModeOrDefault() == task.RotationAccount {
		if user = k.a.UserName; user == "" {
			user = nextUserName(cur, accts)
		}
	}
	return bmc.Credentials{Username: user, Password: pw}, nil
}

var generation = regexp.MustCompile(`-([0-9]+)$`)

// nextUserName is name with its generation suffix counted up ("admin":
// "admin-2", "admin-2": "admin-3"), skipping names the BMC has.
func nextUserName(name string, accts []bmc.Account) string {
	n := 2
	if m := generation.FindStringSubmatch(name); m != nil {
		g, _ := strconv.Atoi(m[1])
		name, n = name[:len(name)-len(m[0])], g+1
	}
	for ; ; n++ {
		c := name + "-" + strconv.Itoa(n)
		if !slices.ContainsFunc(accts, func(a bmc.Account) bool { return a.UserName == c }) {
			return c
		}
	}
}

// send changes the BMC: the account's new password, or the new account
// (updated instead when it exists: a create whose answer was lost). A
// change the BMC refuses drops the pending set: the current one holds.
func (k rotationKind) send(ctx context.Context, t *taskView) error {
	am, cs, err := k.needs(t)
	if err != nil {
		return err
	}
	st, ref := k.status(t), t.job.Spec.CredentialsRef
	pend, has, err := cs.Pending(ctx, ref)
	if err != nil {
		return err
	}
	if !has {
		return &taskFailure{conditions.ReasonVerificationFailed, "the pending credentials are gone from the credentials store"}
	}
	id, update := st.OldAccountID, true
	if k.a.RotationModeOrDefault() == task.RotationAccount {
		id, update, err = k.create(ctx, am, st.OldAccountID, pend)
	}
	if err == nil && update {
		err = am.UpdateAccount(ctx, id, bmc.AccountUpdate{Password: &pend.Password})
	}
	if err != nil && !bmc.IsTransient(err) {
		if derr := cs.DropPending(ctx, ref, pend); derr != nil {
			return errors.Join(err, derr)
		}
	}
	return err
}

// create makes the new account, with the spec's role or the old
// account's; an account of that name made before (a create whose answer
// was lost) is to be updated instead.
func (k rotationKind) create(ctx context.Context, am bmc.AccountManager, oldID string, pend bmc.Credentials) (id string, update bool, err error) {
	accts, err := am.Accounts(ctx)
	if err != nil {
		return "", false, err
	}
	role := bmc.Role(k.a.Role)
	for _, a := range accts {
		switch {
		case a.UserName == pend.Username:
			return a.ID, true, nil
		case a.ID == oldID && role == "":
			role = a.Role
		}
	}
	_, err = am.CreateAccount(ctx, bmc.AccountSpec{UserName: pend.Username, Password: pend.Password, Role: or(role, bmc.RoleAdministrator)})
	return "", false, err
}

func (k rotationKind) check(_ context.Context, t *taskView) (bool, string, error) {
	st := k.status(t)
	if st.Stage == task.RotationDone {
		return true, k.done(st), nil
	}
	return false, "rotation at stage " + or(st.Stage, "not started"), nil
}

func or[S ~string](s, def S) S {
	if s == "" {
		return def
	}
	return s
}

func (k rotationKind) done(st *task.RotationStatus) string {
	if st.UserName != st.OldUserName {
		return fmt.Sprintf("logging in as %q now; account %q (id %s) deleted", st.UserName, st.OldUserName, st.OldAccountID)
	}
	return fmt.Sprintf("password of %q changed; the new one is the current credentials", st.UserName)
}

// notYet carries the rotation on after the change: prove, promote, delete
// the old account (account mode), each stage stored before the next.
func (k rotationKind) notYet(ctx context.Context, t *taskView, _ string) (decision, error) {
	_, cs, err := k.needs(t)
	if err != nil {
		return decision{}, err
	}
	st, ref := k.status(t), t.job.Spec.CredentialsRef
	pend, has, err := cs.Pending(ctx, ref)
	if err != nil {
		return decision{}, err
	}
	switch st.Stage {
	case task.RotationChangeSent:
		if has {
			ok, err := k.accepts(ctx, t, pend)
			if err != nil {
				return decision{}, err
			}
			if ok {
				st.Stage = task.RotationProven
				return storeThenAgain(), nil
			}
		}
		cur, err := cs.Resolve(ctx, ref)
		if err != nil {
			return decision{}, err
		}
		if ok, err := k.accepts(ctx, t, cur); err != nil || !ok {
			return decision{}, k.neither(t, err)
		}
		if has {
			if err := cs.DropPending(ctx, ref, pend); err != nil {
				return decision{}, err
			}
		}
		return failWith(conditions.ReasonVerificationFailed, fmt.Sprintf(
			"the BMC took the change but refuses the new credentials of %q, and still takes the current ones: nothing changed (pending credentials dropped)", st.UserName)), nil
	case task.RotationProven:
		if has {
			if err := cs.Promote(ctx, ref, pend); err != nil {
				return decision{}, err
			}
			t.log.Info("new credentials promoted to current", "task", t.Task+1, "user", pend.Username)
		}
		if st.UserName == st.OldUserName {
			st.Stage = task.RotationDone
			return decision{succeed: k.done(st)}, nil
		}
		st.Stage = task.RotationPromoted
		return storeThenAgain(), nil
	case task.RotationPromoted:
		cur, err := cs.Resolve(ctx, ref)
		if err != nil {
			return decision{}, err
		}
		err = k.session(ctx, t, cur, func(d bmc.Driver) error {
			err := d.(bmc.AccountManager).DeleteAccount(ctx, st.OldAccountID)
			if errors.Is(err, bmc.ErrAccountNotFound) {
				return nil // deleted before a crash
			}
			return err
		})
		if err != nil {
			return decision{}, err
		}
		st.Stage = task.RotationDone
		return decision{succeed: k.done(st)}, nil
	}
	return pollAfter(0), nil
}

// accepts dials a new session with c and reads the accounts through it:
// false when the BMC refuses c.
func (k rotationKind) accepts(ctx context.Context, t *taskView, c bmc.Credentials) (bool, error) {
	err := k.session(ctx, t, c, func(d bmc.Driver) error {
		am, ok := d.(bmc.AccountManager)
		if !ok {
			return notSupported(t.ep, "manage accounts")
		}
		_, err := am.Accounts(ctx)
		return err
	})
	if errors.Is(err, bmc.ErrUnauthorized) {
		return false, nil
	}
	return err == nil, err
}

// session runs f on a new session with c, closed afterwards.
func (k rotationKind) session(ctx context.Context, t *taskView, c bmc.Credentials, f func(bmc.Driver) error) error {
	d, err := t.cfg.dialer.Dial(ctx, *t.ep, c)
	if err != nil {
		return err
	}
	defer d.Close(context.WithoutCancel(ctx))
	return f(d)
}

// neither fails the task when the BMC takes neither credentials (err nil),
// changing nothing; otherwise err.
func (k rotationKind) neither(t *taskView, err error) error {
	if err != nil {
		return err
	}
	st := k.status(t)
	return &taskFailure{conditions.ReasonUnauthorized, fmt.Sprintf(
		"the BMC refuses both the current credentials (user %q) and the pending ones (user %q): nothing changed; set the credentials the BMC takes in the store", st.OldUserName, st.UserName)}
}
