package fake

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.AccountManager = (*Driver)(nil)

// Methods of bmc.AccountManager.
const (
	MethodAccounts       Method = "Accounts"
	MethodPasswordPolicy Method = "PasswordPolicy"
	MethodCreateAccount  Method = "CreateAccount"
	MethodUpdateAccount  Method = "UpdateAccount"
	MethodDeleteAccount  Method = "DeleteAccount"
)

func accountMethod(m Method) bool {
	switch m {
	case MethodAccounts, MethodPasswordPolicy, MethodCreateAccount, MethodUpdateAccount, MethodDeleteAccount:
		return true
	}
	return false
}

// AccountOptions configure the BMC's accounts ([bmc.AccountManager]).
type AccountOptions struct {
	// Policy is the password policy the BMC reports and enforces: the
	// lengths, and LockoutThreshold failed logins lock an account until
	// its password is set (LockoutDuration is reported, not timed).
	// MaxAccounts is set from Slots. Defaults to none.
	Policy bmc.PasswordPolicy
	// Slots, when set, holds accounts in this many fixed slots ("1" ..
	// Slots, slot 1 the anonymous user, never filled), as iDRAC (16) and
	// IPMI BMCs do: CreateAccount fills the lowest free slot and fails
	// with bmc.ErrNoAccountSlot when none is left. At least 2. Defaults to
	// 0: accounts are numbered "1", "2", ... as they are created.
	Slots int
}

// account is one account on the fake; password is what logins check.
type account struct {
	bmc.Account
	password string
	failures int // failed logins since the last success
}

// accountStore is the BMC's accounts, guarded by BMC.mu.
type accountStore struct {
	list   []*account // in ID order
	nextID int        // without slots: the next ID to hand out
}

// initAccounts seeds the store with the administrator of Options.Username
// and Password (ID "1", or slot "2" with Slots), if any.
func (b *BMC) initAccounts() {
	b.accounts.nextID = 1
	if b.opts.Username == "" && b.opts.Password == "" {
		return
	}
	id := b.accounts.nextID
	if b.opts.Accounts.Slots > 0 {
		id = 2
	} else {
		b.accounts.nextID++
	}
	b.accounts.list = append(b.accounts.list, &account{
		Account:  bmc.Account{ID: strconv.Itoa(id), UserName: b.opts.Username, Role: bmc.RoleAdministrator, Enabled: true},
		password: b.opts.Password,
	})
}

// login checks creds against the accounts; called with b.mu held. A BMC
// made without Username and Password accepts anyone, except a user name
// that names an account, which must give that account's password.
func (b *BMC) login(creds bmc.Credentials) error {
	a := b.accountNamed(creds.Username)
	if a == nil {
		if b.opts.Username == "" && b.opts.Password == "" {
			return nil
		}
		return fmt.Errorf("login as user %q refused: %w", creds.Username, bmc.ErrUnauthorized)
	}
	switch {
	case a.Locked:
		return fmt.Errorf("login as user %q refused: the account is locked after failed logins: %w", creds.Username, bmc.ErrUnauthorized)
	case a.password != creds.Password:
		a.failures++
		if t := b.opts.Accounts.Policy.LockoutThreshold; t > 0 && a.failures >= t {
			a.Locked = true
		}
		return fmt.Errorf("login as user %q refused: %w", creds.Username, bmc.ErrUnauthorized)
	case !a.Enabled:
		return fmt.Errorf("login as user %q refused: the account is disabled: %w", creds.Username, bmc.ErrUnauthorized)
	}
	a.failures = 0
	return nil
}

func (b *BMC) accountNamed(name string) *account {
	for _, a := range b.accounts.list {
		if a.UserName == name {
			return a
		}
	}
	return nil
}

func (b *BMC) accountByID(id string) (*account, int) {
	for i, a := range b.accounts.list {
		if a.ID == id {
			return a, i
		}
	}
	return nil, -1
}

func (b *BMC) lacksAccounts(what string) error {
	if b.lacks[bmc.CapabilityAccounts] {
		return fmt.Errorf("%s: %w", what, bmc.ErrNotSupported)
	}
	return nil
}

// Accounts implements [bmc.AccountManager]: the accounts in ID order.
func (d *Driver) Accounts(ctx context.Context) ([]bmc.Account, error) {
	var out []bmc.Account
	err := d.do(ctx, MethodAccounts, nil, func() error {
		if err := d.bmc.lacksAccounts("listing accounts"); err != nil {
			return err
		}
		out = d.bmc.accountList()
		return nil
	})
	return out, err
}

func (b *BMC) accountList() []bmc.Account {
	out := make([]bmc.Account, 0, len(b.accounts.list))
	for _, a := range b.accounts.list {
		out = append(out, a.Account)
	}
	return out
}

// PasswordPolicy implements [bmc.AccountManager]: Options.Accounts.Policy,
// MaxAccounts the number of slots.
func (d *Driver) PasswordPolicy(ctx context.Context) (bmc.PasswordPolicy, error) {
	var p bmc.PasswordPolicy
	err := d.do(ctx, MethodPasswordPolicy, nil, func() error {
		if err := d.bmc.lacksAccounts("reading the password policy"); err != nil {
			return err
		}
		p = d.bmc.opts.Accounts.Policy
		p.MaxAccounts = d.bmc.opts.Accounts.Slots
		return nil
	})
	return p, err
}

// CreateAccount implements [bmc.AccountManager]. The call log holds the
// spec with its password replaced by "<redacted>".
func (d *Driver) CreateAccount(ctx context.Context, spec bmc.AccountSpec) (bmc.Account, error) {
	var out bmc.Account
	logged := spec
	logged.Password = "<redacted>"
	err := d.do(ctx, MethodCreateAccount, []any{logged}, func() error {
		b := d.bmc
		if err := b.lacksAccounts("creating an account"); err != nil {
			return err
		}
		if err := spec.Validate(); err != nil {
			return bmc.Permanent(err)
		}
		if err := b.opts.Accounts.Policy.Check(spec.Password); err != nil {
			return bmc.Permanent(err)
		}
		if b.accountNamed(spec.UserName) != nil {
			return bmc.Permanent(fmt.Errorf("an account named %q exists", spec.UserName))
		}
		id, err := b.freeAccountID()
		if err != nil {
			return err
		}
		a := &account{Account: bmc.Account{ID: id, UserName: spec.UserName, Role: spec.Role, Enabled: !spec.Disabled}, password: spec.Password}
		b.accounts.list = append(b.accounts.list, a)
		sortAccounts(b.accounts.list)
		out = a.Account
		return nil
	})
	return out, err
}

// freeAccountID is the lowest free slot other than 1, or the next number.
func (b *BMC) freeAccountID() (string, error) {
	n := b.opts.Accounts.Slots
	if n == 0 {
		id := strconv.Itoa(b.accounts.nextID)
		b.accounts.nextID++
		return id, nil
	}
	for slot := 2; slot <= n; slot++ {
		if a, _ := b.accountByID(strconv.Itoa(slot)); a == nil {
			return strconv.Itoa(slot), nil
		}
	}
	return "", bmc.Permanent(fmt.Errorf("all %d slots hold accounts: %w", n, bmc.ErrNoAccountSlot))
}

func sortAccounts(l []*account) {
	num := func(a *account) int { n, _ := strconv.Atoi(a.ID); return n }
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && num(l[j]) < num(l[j-1]); j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
}

// UpdateAccount implements [bmc.AccountManager]. A password change also
// unlocks a locked account. The call log holds the update with its
// password replaced by "<redacted>".
func (d *Driver) UpdateAccount(ctx context.Context, id string, u bmc.AccountUpdate) error {
	logged := u
	if u.Password != nil {
		r := "<redacted>"
		logged.Password = &r
	}
	return d.do(ctx, MethodUpdateAccount, []any{id, logged}, func() error {
		b := d.bmc
		if err := b.lacksAccounts("updating account " + id); err != nil {
			return err
		}
		if err := u.Validate(); err != nil {
			return bmc.Permanent(err)
		}
		a, _ := b.accountByID(id)
		if a == nil {
			return bmc.Permanent(fmt.Errorf("account %q: %w", id, bmc.ErrAccountNotFound))
		}
		if u.Password != nil {
			if err := b.opts.Accounts.Policy.Check(*u.Password); err != nil {
				return bmc.Permanent(err)
			}
			a.password, a.Locked, a.failures = *u.Password, false, 0
		}
		if u.Role != nil {
			a.Role = *u.Role
		}
		if u.Enabled != nil {
			a.Enabled = *u.Enabled
		}
		return nil
	})
}

// DeleteAccount implements [bmc.AccountManager].
func (d *Driver) DeleteAccount(ctx context.Context, id string) error {
	return d.do(ctx, MethodDeleteAccount, []any{id}, func() error {
		b := d.bmc
		if err := b.lacksAccounts("deleting account " + id); err != nil {
			return err
		}
		_, i := b.accountByID(id)
		if i < 0 {
			return bmc.Permanent(fmt.Errorf("account %q: %w", id, bmc.ErrAccountNotFound))
		}
		b.accounts.list = append(b.accounts.list[:i], b.accounts.list[i+1:]...)
		return nil
	})
}

// Accounts returns the BMC's accounts (a test hook; logs no call).
func (b *BMC) Accounts() []bmc.Account {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accountList()
}

// AccountPassword reports whether the account named user has password
// (a test hook; logs no call): the BMC is asked, the password never
// returned.
func (b *BMC) AccountPassword(user, password string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.accountNamed(user)
	return a != nil && a.password == password
}

func (o AccountOptions) validate() error {
	if o.Slots < 0 || o.Slots == 1 {
		return fmt.Errorf("fake: Options.Accounts.Slots %d: want 0 (no fixed slots) or at least 2 (slot 1 is the anonymous user)", o.Slots)
	}
	if _, err := bmc.GeneratePassword(o.Policy); err != nil {
		return errors.New("fake: Options.Accounts.Policy: " + err.Error())
	}
	return nil
}
