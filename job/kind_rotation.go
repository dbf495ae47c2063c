package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

func init() {
	registerKind("rotateCredentials", func(s *task.Spec) kind { return rotationKind{s.RotateCredentials} })
}

// rotationKind rotates the job's credentials (docs/credential-rotation.md).
// prepare stores new credentials as pending in the bmc.CredentialsStore,
// then stage ChangeSent with the job; send changes the password (or creates
// the account); notYet proves the new credentials on a new session,
// promotes them, and in account mode deletes the old account, each stage
// stored before what follows it. Resumed at ChangeSent, prepare asks the
// BMC which credentials it takes before it sends anything. No password
// goes into the status, a message or a log line.
type rotationKind struct{ a *task.RotateCredentialsAction }

func (k rotationKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (k rotationKind) usesBMC() bool                              { return true }
func (k rotationKind) recheckable() bool                          { return true }
func (k rotationKind) checksStatusOnly()                          {}

// env is what every stage needs: the account manager, the store, the
// task's status and the credentials reference; NotSupported without them.
func (k rotationKind) env(t *taskView) (bmc.AccountManager, bmc.CredentialsStore, *task.RotationStatus, string, error) {
	am, ok := t.BMC.(bmc.AccountManager)
	if !ok {
		return nil, nil, nil, "", notSupported(t.ep, "manage accounts")
	}
	cs, ok := t.cfg.credentials.(bmc.CredentialsStore)
	if !ok {
		return nil, nil, nil, "", &bmc.OpError{Op: "rotate credentials", Endpoint: t.ep.String(), Err: fmt.Errorf(
			"the credentials resolver (%T) cannot hold pending credentials: give the Stepper a bmc.CredentialsStore: %w", t.cfg.credentials, bmc.ErrNotSupported)}
	}
	if t.status.Rotation == nil {
		t.status.Rotation = &task.RotationStatus{}
	}
	return am, cs, t.status.Rotation, t.job.Spec.CredentialsRef, nil
}

func (k rotationKind) preflight(ctx context.Context, t *taskView) error {
	am, _, _, _, err := k.env(t)
	if err == nil {
		_, err = am.PasswordPolicy(ctx) // the BMC has accounts
	}
	return err
}

// prepare stores the pending credentials (a pending set is reused), then
// stage ChangeSent. Resumed at ChangeSent: skip when the BMC takes the
// pending set, send again when it takes the current one, fail when
// neither.
func (k rotationKind) prepare(ctx context.Context, t *taskView) (prep, error) {
	am, cs, st, ref, err := k.env(t)
	if err != nil {
		return prep{}, err
	}
	switch st.Stage {
	case "":
	case task.RotationChangeSent:
		pend, has, err := cs.Pending(ctx, ref)
		if err != nil {
			return prep{}, err
		}
		if has {
			if ok, err := k.accepts(ctx, t, pend); ok || err != nil {
				return prep{skip: ok}, err
			}
		}
		if err := k.currentWorks(ctx, t, cs, ref); err != nil || has {
			return prep{}, err
		}
		st.Stage = "" // the pending set was dropped: start again
	default:
		return prep{skip: true}, nil
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
	if err == nil && !has {
		pend, err = k.generate(ctx, am, cur.Username, accts)
		if err == nil {
			err = cs.SetPending(ctx, ref, pend)
			t.log.Info("new credentials stored as pending", "task", t.Task+1, "user", pend.Username)
		}
	}
	if err != nil {
		return prep{}, err
	}
	if password := k.a.RotationModeOrDefault() == task.RotationPassword; password != (pend.Username == cur.Username) {
		return prep{}, &taskFailure{conditions.ReasonInvalidSpec, fmt.Sprintf("the pending credentials name user %q, which mode %s cannot give (the current user is %q): drop them from the credentials store", pend.Username, k.a.RotationModeOrDefault(), cur.Username)}
	}
	*st = task.RotationStatus{Stage: task.RotationChangeSent, UserName: pend.Username, OldUserName: cur.Username, OldAccountID: accts[i].ID}
	return prep{store: true}, nil
}

// generate makes new credentials to the BMC's password policy.
func (k rotationKind) generate(ctx context.Context, am bmc.AccountManager, user string, accts []bmc.Account) (bmc.Credentials, error) {
	p, err := am.PasswordPolicy(ctx)
	if err != nil {
		return bmc.Credentials{}, err
	}
	pw, err := bmc.GeneratePassword(p)
	if err != nil {
		return bmc.Credentials{}, &taskFailure{conditions.ReasonNotSupported, "the BMC's password policy: " + err.Error()}
	}
	if k.a.RotationModeOrDefault() == task.RotationAccount {
		user = cmp.Or(k.a.UserName, bmc.NextUserName(user, accts))
	}
	return bmc.Credentials{Username: user, Password: pw}, nil
}

// send changes the BMC: the account's password, or the new account (its
// password set again when it exists: a create whose answer was lost). A
// change the BMC refuses drops the pending set: the current one holds.
func (k rotationKind) send(ctx context.Context, t *taskView) error {
	am, cs, st, ref, err := k.env(t)
	if err != nil {
		return err
	}
	pend, has, err := cs.Pending(ctx, ref)
	if err != nil {
		return err
	}
	if !has {
		return &taskFailure{conditions.ReasonVerificationFailed, "the pending credentials are gone from the credentials store"}
	}
	id := st.OldAccountID
	if k.a.RotationModeOrDefault() == task.RotationAccount {
		id, err = k.create(ctx, am, st.OldAccountID, pend)
	}
	if err == nil && id != "" {
		err = am.UpdateAccount(ctx, id, bmc.AccountUpdate{Password: &pend.Password})
	}
	if err != nil && !bmc.IsTransient(err) {
		err = errors.Join(err, cs.DropPending(ctx, ref, pend))
	}
	return err
}

// create makes the new account with the spec's role or the old account's;
// an account of that name (made by a create whose answer was lost) is
// returned, to be updated instead.
func (k rotationKind) create(ctx context.Context, am bmc.AccountManager, oldID string, pend bmc.Credentials) (existing string, err error) {
	accts, err := am.Accounts(ctx)
	if err != nil {
		return "", err
	}
	role := bmc.Role(k.a.Role)
	for _, a := range accts {
		if a.UserName == pend.Username {
			return a.ID, nil
		}
		if a.ID == oldID && role == "" {
			role = a.Role
		}
	}
	_, err = am.CreateAccount(ctx, bmc.AccountSpec{UserName: pend.Username, Password: pend.Password, Role: cmp.Or(role, bmc.RoleAdministrator)})
	return "", err
}

func (k rotationKind) check(_ context.Context, t *taskView) (bool, string, error) {
	st := t.status.Rotation
	if st == nil || st.Stage != task.RotationDone {
		return false, "rotation not done", nil
	}
	if st.UserName != st.OldUserName {
		return true, fmt.Sprintf("logging in as %q; account %q (id %s) deleted", st.UserName, st.OldUserName, st.OldAccountID), nil
	}
	return true, fmt.Sprintf("password of %q changed", st.UserName), nil
}

// notYet goes on after the change: prove, promote, delete the old account
// (account mode), each stage stored before the next.
func (k rotationKind) notYet(ctx context.Context, t *taskView, _ string) (decision, error) {
	_, cs, st, ref, err := k.env(t)
	if err != nil {
		return decision{}, err
	}
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
		if err := k.currentWorks(ctx, t, cs, ref); err != nil {
			return decision{}, err
		}
		why := "the pending credentials are gone from the store"
		if has {
			if err := cs.DropPending(ctx, ref, pend); err != nil {
				return decision{}, err
			}
			why = fmt.Sprintf("the BMC took the change but refuses the new credentials of %q (dropped from the store)", st.UserName)
		}
		if st.UserName != st.OldUserName {
			why += fmt.Sprintf("; account %q may be left on the BMC: delete it", st.UserName)
		}
		return failWith(conditions.ReasonVerificationFailed, why+"; the current credentials still work"), nil
	case task.RotationProven:
		if has {
			if err := cs.Promote(ctx, ref, pend); err != nil {
				return decision{}, err
			}
			t.log.Info("new credentials promoted to current", "task", t.Task+1, "user", pend.Username)
		}
		if st.UserName == st.OldUserName {
			return k.done(ctx, t)
		}
		st.Stage = task.RotationPromoted
		return storeThenAgain(), nil
	case task.RotationPromoted:
		cur, err := cs.Resolve(ctx, ref)
		if err == nil {
			err = bmc.WithSession(ctx, t.cfg.dialer, *t.ep, cur, func(d bmc.Driver) error {
				return d.(bmc.AccountManager).DeleteAccount(ctx, st.OldAccountID)
			})
		}
		if err != nil && !errors.Is(err, bmc.ErrAccountNotFound) { // not found: deleted before a crash
			return decision{}, err
		}
		return k.done(ctx, t)
	}
	return pollAfter(0), nil
}

// done ends the task: stage Done, stored with its success.
func (k rotationKind) done(ctx context.Context, t *taskView) (decision, error) {
	t.status.Rotation.Stage = task.RotationDone
	_, msg, _ := k.check(ctx, t)
	return decision{succeed: msg}, nil
}

func (k rotationKind) accepts(ctx context.Context, t *taskView, c bmc.Credentials) (bool, error) {
	return bmc.Accepts(ctx, t.cfg.dialer, *t.ep, c)
}

// currentWorks is nil when the BMC takes the current credentials; when it
// refuses them too, the task fails, having changed nothing.
func (k rotationKind) currentWorks(ctx context.Context, t *taskView, cs bmc.CredentialsStore, ref string) error {
	cur, err := cs.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	if ok, err := k.accepts(ctx, t, cur); ok || err != nil {
		return err
	}
	return &taskFailure{conditions.ReasonUnauthorized, fmt.Sprintf(
		"the BMC refuses both the current credentials (user %q) and the pending ones (user %q): nothing changed; put the credentials it takes in the store", cur.Username, t.status.Rotation.UserName)}
}
