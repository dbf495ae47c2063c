package bmctest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// Account names the Accounts/... subtests create: short enough for IPMI's
// 16-byte user names.
const (
	accountLogin = "bmctest-login"
	accountRole  = "bmctest-role"
	unknownID    = "4242"
)

// accounts checks bmc.AccountManager:
//
//   - List: the accounts are well formed, with unique IDs, and the
//     account of Target.Credentials (when set) is among them;
//   - Policy: the password policy reads, and bmc.GeneratePassword fits it;
//   - CreateLoginUpdateDelete: a created account is listed and logs in
//     (Target.Dial); after a password change the new password logs in
//     and the old one is refused; a disabled account is refused; a deleted
//     account is gone and refused (the refusals where Target.Credentials
//     is set: a peer that accepts anyone may let them in). No error holds
//     either password;
//   - UpdateRole: a role change is listed (with the password in the same
//     update where the peer wants it: bmc.ErrPasswordRequired);
//   - UnknownID: updating or deleting an unknown account is
//     bmc.ErrAccountNotFound, permanent.
func (s *suite) accounts(t *testing.T, path string) {
	s.run(t, path, "List", func(tc *tcase) {
		am := tc.accountManager()
		list := tc.listAccounts(am)
		// A peer that accepts anyone (no Target.Credentials) may list none.
		if u := tc.target.Credentials.Username; u != "" && findAccount(list, u) == nil {
			tc.Errorf("Accounts = %+v: no account named %q (Target.Credentials)", list, u)
		}
	})
	s.run(t, path, "Policy", func(tc *tcase) {
		am := tc.accountManager()
		p, err := am.PasswordPolicy(tc.ctx())
		tc.noErr("PasswordPolicy", err)
		if p.MinLength < 0 || p.MaxLength < 0 || (p.MaxLength > 0 && p.MinLength > p.MaxLength) {
			tc.Errorf("PasswordPolicy = %+v: lengths out of order", p)
		}
		pw, err := bmc.GeneratePassword(p)
		tc.noErr("GeneratePassword for the peer's policy", err)
		tc.noErr("PasswordPolicy.Check of a generated password", p.Check(pw))
		if p.MaxAccounts > 0 && len(tc.listAccounts(am)) > p.MaxAccounts {
			tc.Errorf("PasswordPolicy.MaxAccounts is %d, Accounts lists more", p.MaxAccounts)
		}
	})
	s.run(t, path, "CreateLoginUpdateDelete", func(tc *tcase) {
		am := tc.accountManager()
		pw1, pw2 := tc.newPassword(am), tc.newPassword(am)
		acct, err := am.CreateAccount(tc.ctx(), bmc.AccountSpec{UserName: accountLogin, Password: pw1, Role: bmc.RoleAdministrator})
		tc.noErr("CreateAccount", err)
		if acct.ID == "" || acct.UserName != accountLogin || acct.Role != bmc.RoleAdministrator || !acct.Enabled {
			tc.Errorf("CreateAccount returned %+v; want an ID, user %q, role Administrator, enabled", acct, accountLogin)
		}
		if got := findAccount(tc.listAccounts(am), accountLogin); got == nil || *got != acct {
			tc.Errorf("after CreateAccount, Accounts lists %+v; CreateAccount returned %+v", got, acct)
		}
		tc.wantLogin(accountLogin, pw1)

		tc.noErr("UpdateAccount(password)", am.UpdateAccount(tc.ctx(), acct.ID, bmc.AccountUpdate{Password: &pw2}))
		tc.wantLogin(accountLogin, pw2)
		tc.wantRefused(accountLogin, pw1, "the old password after the change")

		off := false
		tc.updateWithPassword(am, acct.ID, bmc.AccountUpdate{Enabled: &off}, pw2)
		if got := findAccount(tc.listAccounts(am), accountLogin); got == nil || got.Enabled {
			tc.Errorf("after disabling it, Accounts lists %+v", got)
		}
		tc.wantRefused(accountLogin, pw2, "a disabled account")

		tc.noErr("DeleteAccount", am.DeleteAccount(tc.ctx(), acct.ID))
		if got := findAccount(tc.listAccounts(am), accountLogin); got != nil {
			tc.Errorf("after DeleteAccount, Accounts still lists %+v", got)
		}
		tc.wantRefused(accountLogin, pw2, "a deleted account")
	})
	s.run(t, path, "UpdateRole", func(tc *tcase) {
		am := tc.accountManager()
		pw := tc.newPassword(am)
		acct, err := am.CreateAccount(tc.ctx(), bmc.AccountSpec{UserName: accountRole, Password: pw, Role: bmc.RoleReadOnly})
		tc.noErr("CreateAccount", err)
		defer func() { tc.noErr("DeleteAccount", am.DeleteAccount(tc.ctx(), acct.ID)) }()
		if acct.Role != bmc.RoleReadOnly {
			tc.Errorf("CreateAccount(ReadOnly) returned role %q", acct.Role)
		}
		role := bmc.RoleOperator
		tc.updateWithPassword(am, acct.ID, bmc.AccountUpdate{Role: &role}, pw)
		if got := findAccount(tc.listAccounts(am), accountRole); got == nil || got.Role != bmc.RoleOperator {
			tc.Errorf("after a role change to Operator, Accounts lists %+v", got)
		}
	})
	s.run(t, path, "UnknownID", func(tc *tcase) {
		am := tc.accountManager()
		on := true
		for what, err := range map[string]error{
			"UpdateAccount": am.UpdateAccount(tc.ctx(), unknownID, bmc.AccountUpdate{Enabled: &on}),
			"DeleteAccount": am.DeleteAccount(tc.ctx(), unknownID),
		} {
			if !errors.Is(err, bmc.ErrAccountNotFound) {
				tc.Errorf("%s(%q): error %v does not wrap bmc.ErrAccountNotFound", what, unknownID, err)
			}
			if bmc.IsTransient(err) {
				tc.Errorf("%s(%q): error %v is transient; want permanent", what, unknownID, err)
			}
			tc.requireOpError(what, err)
		}
	})
}

func (tc *tcase) accountManager() bmc.AccountManager {
	tc.Helper()
	am, ok := tc.drv.(bmc.AccountManager)
	if !ok {
		tc.Skipf("%T does not implement bmc.AccountManager", tc.drv)
	}
	if tc.opts.lacks(bmc.CapabilityAccounts) {
		tc.Skipf("the peer lacks %s (Options.Unsupported); Unsupported/%s checks the error", bmc.CapabilityAccounts, bmc.CapabilityAccounts)
	}
	return am
}

// newPassword generates a password for the peer's policy and adds it to
// the passwords no error may contain.
func (tc *tcase) newPassword(am bmc.AccountManager) string {
	tc.Helper()
	p, err := am.PasswordPolicy(tc.ctx())
	tc.noErr("PasswordPolicy", err)
	if p.MaxLength == 0 || p.MaxLength > tc.opts.MaxPassword {
		p.MaxLength = tc.opts.MaxPassword
	}
	pw, err := bmc.GeneratePassword(p)
	tc.noErr("GeneratePassword", err)
	tc.secrets = append(tc.secrets, pw)
	return pw
}

// updateWithPassword sends u; a peer that wants the password with the
// change (bmc.ErrPasswordRequired) gets it again with pw.
func (tc *tcase) updateWithPassword(am bmc.AccountManager, id string, u bmc.AccountUpdate, pw string) {
	tc.Helper()
	err := am.UpdateAccount(tc.ctx(), id, u)
	if errors.Is(err, bmc.ErrPasswordRequired) {
		tc.noSecret("UpdateAccount", err)
		tc.Logf("the peer wants the password with the change (%v); sending it", err)
		u.Password = &pw
		err = am.UpdateAccount(tc.ctx(), id, u)
	}
	tc.noErr(fmt.Sprintf("UpdateAccount(%v)", u), err)
}

func (tc *tcase) listAccounts(am bmc.AccountManager) []bmc.Account {
	tc.Helper()
	list, err := am.Accounts(tc.ctx())
	tc.noErr("Accounts", err)
	ids := map[string]bool{}
	for _, a := range list {
		if a.ID == "" || a.UserName == "" {
			tc.Errorf("Accounts lists %+v: every account needs an ID and a user name (empty slots are left out)", a)
		}
		if ids[a.ID] {
			tc.Errorf("Accounts lists ID %q twice", a.ID)
		}
		ids[a.ID] = true
		if a.Role == "" {
			tc.Errorf("Accounts lists %+v without a role", a)
		}
	}
	return list
}

func findAccount(list []bmc.Account, user string) *bmc.Account {
	for i := range list {
		if list[i].UserName == user {
			return &list[i]
		}
	}
	return nil
}

// wantLogin dials as user with password and reads the power state.
func (tc *tcase) wantLogin(user, password string) {
	tc.Helper()
	if tc.target.Dial == nil {
		tc.Logf("Target.Dial is not set: the login with the new credentials is not checked")
		return
	}
	d, err := tc.target.Dial(tc.ctx(), bmc.Credentials{Username: user, Password: password})
	tc.noErr("Dial as the account "+user, err)
	_, err = d.PowerState(tc.ctx())
	tc.noErr("PowerState as the account "+user, err)
	tc.noErr("Close", d.Close(tc.ctx()))
}

// wantRefused dials as user with password and wants bmc.ErrUnauthorized.
func (tc *tcase) wantRefused(user, password, what string) {
	tc.Helper()
	if tc.target.Dial == nil || tc.target.Credentials == (bmc.Credentials{}) {
		return // no Dial, or a peer that accepts anyone
	}
	tc.Logf("logging in with %s must fail", what)
	tc.wantUnauthorized(bmc.Credentials{Username: user, Password: password})
}

func (tc *tcase) checkAccountsUnsupported() {
	tc.Helper()
	am, ok := tc.drv.(bmc.AccountManager)
	if !ok {
		tc.Skipf("%T does not implement bmc.AccountManager", tc.drv)
	}
	_, err := am.Accounts(tc.ctx())
	tc.requireNotSupported("Accounts", err)
	_, err = am.PasswordPolicy(tc.ctx())
	tc.requireNotSupported("PasswordPolicy", err)
	_, err = am.CreateAccount(tc.ctx(), bmc.AccountSpec{UserName: accountLogin, Password: "Zq7-bmctest-Xw3", Role: bmc.RoleReadOnly})
	tc.requireNotSupported("CreateAccount", err)
}
