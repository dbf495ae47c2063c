package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.AccountManager = (*Driver)(nil)

// accountService is what the driver reads from the AccountService: the
// policy (decoded by gofish's schemas.AccountService) and the link to the
// accounts (unexported in gofish's type).
type accountService struct {
	policy   bmc.PasswordPolicy
	accounts string
}

// decodeAccountService decodes an AccountService document.
func decodeAccountService(b []byte) (accountService, error) {
	var svc schemas.AccountService
	if err := json.Unmarshal(b, &svc); err != nil {
		return accountService{}, bmc.Permanent(fmt.Errorf("the AccountService is not valid JSON: %w", err))
	}
	var links struct {
		Accounts struct {
			ID string `json:"@odata.id"`
		}
	}
	_ = json.Unmarshal(b, &links) // the same bytes decoded above
	out := accountService{accounts: pathOf(links.Accounts.ID)}
	if out.accounts == "" {
		return accountService{}, bmc.Permanent(fmt.Errorf("the AccountService has no Accounts collection: %w", bmc.ErrNotSupported))
	}
	p := &out.policy
	p.MinLength, p.MaxLength = clampInt(uint64(svc.MinPasswordLength)), clampInt(uint64(svc.MaxPasswordLength))
	if svc.AccountLockoutThreshold != nil {
		p.LockoutThreshold = clampInt(uint64(*svc.AccountLockoutThreshold))
	}
	if svc.AccountLockoutDuration != nil && *svc.AccountLockoutDuration > 0 {
		p.LockoutDuration = time.Duration(min(uint64(*svc.AccountLockoutDuration), 1<<30)) * time.Second
	}
	if p.MaxLength > 0 && p.MinLength > p.MaxLength {
		return accountService{}, bmc.Permanent(fmt.Errorf("the AccountService's MinPasswordLength %d is over its MaxPasswordLength %d", p.MinLength, p.MaxLength))
	}
	return out, nil
}

func clampInt(v uint64) int { return int(min(v, 1<<20)) }

// accountDoc is one ManagerAccount as the driver reads it (through
// gofish's schemas.ManagerAccount), with where it was read.
type accountDoc struct {
	uri string
	bmc.Account
}

// empty reports whether the account is an empty slot of a fixed-slot BMC.
func (a accountDoc) empty() bool { return a.UserName == "" }

// decodeAccount decodes a ManagerAccount read at uri.
func decodeAccount(uri string, b []byte) (accountDoc, error) {
	var m schemas.ManagerAccount
	if err := json.Unmarshal(b, &m); err != nil {
		return accountDoc{}, bmc.Permanent(fmt.Errorf("the account at %s is not valid JSON: %w", uri, err))
	}
	id := strings.TrimSpace(m.ID)
	if id == "" {
		id = lastSegment(uri)
	}
	if id == "" {
		return accountDoc{}, bmc.Permanent(fmt.Errorf("the account at %s has no Id", quoteClip(uri)))
	}
	return accountDoc{uri: uri, Account: bmc.Account{
		ID: clip(id), UserName: clip(m.UserName), Role: bmc.Role(clip(m.RoleID)), Enabled: m.Enabled, Locked: m.Locked,
	}}, nil
}

// clip bounds a BMC's text to bmc.MaxInventoryString bytes (account fields,
// values quoted in decode errors).
func clip(s string) string {
	if len(s) > bmc.MaxInventoryString {
		return s[:bmc.MaxInventoryString]
	}
	return s
}

// readAccountService reads the AccountService the service root names; a
// root without one is ErrNotSupported.
func (d *Driver) readAccountService(ctx context.Context) (accountService, error) {
	uri := d.rootLink("AccountService")
	if uri == "" {
		return accountService{}, bmc.Permanent(fmt.Errorf("the service root has no AccountService: %w", bmc.ErrNotSupported))
	}
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		if notFound(err) {
			return accountService{}, fmt.Errorf("the AccountService %s is not there: %w: %w", uri, bmc.ErrNotSupported, err)
		}
		return accountService{}, err
	}
	return decodeAccountService(raw)
}

// readAccounts reads every member of the Accounts collection, empty slots
// included, in the collection's order.
func (d *Driver) readAccounts(ctx context.Context, svc accountService) ([]accountDoc, error) {
	uris, err := d.collection(ctx, svc.accounts)
	if err != nil {
		return nil, fmt.Errorf("list the accounts at %s: %w", svc.accounts, err)
	}
	if len(uris) > bmc.MaxInventoryEntries {
		uris = uris[:bmc.MaxInventoryEntries]
	}
	out := make([]accountDoc, 0, len(uris))
	for _, u := range uris {
		a, err := d.readAccount(ctx, u)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (d *Driver) readAccount(ctx context.Context, uri string) (accountDoc, error) {
	var raw json.RawMessage
	if _, err := d.getJSON(ctx, uri, &raw); err != nil {
		return accountDoc{}, fmt.Errorf("read the account at %s: %w", uri, err)
	}
	return decodeAccount(uri, raw)
}

// fixedSlots reports whether the collection holds empty slots: a BMC that
// keeps accounts in fixed slots (iDRAC, XCC on Purley).
func fixedSlots(all []accountDoc) bool {
	for _, a := range all {
		if a.empty() {
			return true
		}
	}
	return false
}

// Accounts implements [bmc.AccountManager]: the AccountService's accounts
// (one GET of the service, one of the collection, one per member), empty
// slots left out.
func (d *Driver) Accounts(ctx context.Context) ([]bmc.Account, error) {
	const op = "list accounts"
	done, err := d.begin()
	if err != nil {
		return nil, d.opErr(op, err)
	}
	defer done()
	svc, err := d.readAccountService(ctx)
	if err != nil {
		return nil, d.opErr(op, err)
	}
	all, err := d.readAccounts(ctx, svc)
	if err != nil {
		return nil, d.opErr(op, err)
	}
	var out []bmc.Account
	for _, a := range all {
		if !a.empty() {
			out = append(out, a.Account)
		}
	}
	return out, nil
}

// PasswordPolicy implements [bmc.AccountManager]: the AccountService's
// password lengths and lock-out; on a fixed-slot BMC MaxAccounts is the
// number of slots (which takes reading the accounts).
func (d *Driver) PasswordPolicy(ctx context.Context) (bmc.PasswordPolicy, error) {
	const op = "read password policy"
	done, err := d.begin()
	if err != nil {
		return bmc.PasswordPolicy{}, d.opErr(op, err)
	}
	defer done()
	svc, err := d.readAccountService(ctx)
	if err != nil {
		return bmc.PasswordPolicy{}, d.opErr(op, err)
	}
	all, err := d.readAccounts(ctx, svc)
	if err != nil {
		return bmc.PasswordPolicy{}, d.opErr(op, err)
	}
	p := svc.policy
	if fixedSlots(all) {
		p.MaxAccounts = len(all)
	}
	return p, nil
}

// CreateAccount implements [bmc.AccountManager]. It lists the accounts
// first: a name already there fails before any change; on a fixed-slot
// BMC (empty members listed) the lowest empty slot other than 1 is filled
// by one PATCH of UserName, Password, RoleId and Enabled; otherwise the
// account is POSTed to the collection. A POST answered 405 (a fixed-slot
// BMC with no empty slot left) is bmc.ErrNoAccountSlot. The account is
// read back.
func (d *Driver) CreateAccount(ctx context.Context, spec bmc.AccountSpec) (bmc.Account, error) {
	op := "create account " + strconv.Quote(spec.UserName)
	if err := spec.Validate(); err != nil {
		return bmc.Account{}, d.opErr(op, bmc.Permanent(err))
	}
	done, err := d.begin()
	if err != nil {
		return bmc.Account{}, d.opErr(op, err)
	}
	defer done()
	a, err := d.createAccount(ctx, spec)
	if err != nil {
		return bmc.Account{}, d.opErr(op, scrubPasswords(err, spec.Password))
	}
	return a, nil
}

func (d *Driver) createAccount(ctx context.Context, spec bmc.AccountSpec) (bmc.Account, error) {
	svc, err := d.readAccountService(ctx)
	if err != nil {
		return bmc.Account{}, err
	}
	all, err := d.readAccounts(ctx, svc)
	if err != nil {
		return bmc.Account{}, err
	}
	for _, a := range all {
		if !a.empty() && a.UserName == spec.UserName {
			return bmc.Account{}, bmc.Permanent(fmt.Errorf("an account named %q exists (ID %s)", spec.UserName, a.ID))
		}
	}
	body := map[string]any{"UserName": spec.UserName, "Password": spec.Password, "RoleId": string(spec.Role), "Enabled": !spec.Disabled}
	if slot, ok := freeSlot(all); ok {
		if err := d.patch(ctx, slot.uri, body, ""); err != nil {
			return bmc.Account{}, fmt.Errorf("fill the empty account slot %s: %w", slot.uri, err)
		}
		got, err := d.readAccount(ctx, slot.uri)
		return got.Account, err
	}
	var location string
	var created []byte
	err = d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.Post(svc.accounts, body)
		if err != nil {
			return err
		}
		defer drain(resp)
		location = resp.Header.Get("Location")
		created, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return err
	})
	var se *StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusMethodNotAllowed {
		return bmc.Account{}, bmc.Permanent(fmt.Errorf("the BMC takes no new account by POST to %s (405) and has no empty slot: %w", svc.accounts, bmc.ErrNoAccountSlot))
	}
	if err != nil {
		return bmc.Account{}, fmt.Errorf("POST the account to %s: %w", svc.accounts, err)
	}
	if location != "" {
		got, err := d.readAccount(ctx, pathOf(location))
		return got.Account, err
	}
	got, err := decodeAccount(svc.accounts, created)
	return got.Account, err
}

// freeSlot is the empty slot with the lowest numeric Id other than 1 (the
// IPMI specification's null user; iDRAC's slot 1).
func freeSlot(all []accountDoc) (accountDoc, bool) {
	best, bestN := accountDoc{}, 0
	for _, a := range all {
		if !a.empty() {
			continue
		}
		n, err := strconv.Atoi(a.ID)
		if err != nil || n == 1 {
			continue
		}
		if bestN == 0 || n < bestN {
			best, bestN = a, n
		}
	}
	return best, bestN != 0
}

// findAccount reads the named (not empty) account with Id id, following
// the collection's links (never building the path).
func (d *Driver) findAccount(ctx context.Context, id string) (accountDoc, error) {
	svc, err := d.readAccountService(ctx)
	if err != nil {
		return accountDoc{}, err
	}
	uris, err := d.collection(ctx, svc.accounts)
	if err != nil {
		return accountDoc{}, fmt.Errorf("list the accounts at %s: %w", svc.accounts, err)
	}
	for _, u := range uris {
		if lastSegment(u) != id {
			continue
		}
		a, err := d.readAccount(ctx, u)
		if err != nil {
			return accountDoc{}, err
		}
		if a.empty() {
			break
		}
		return a, nil
	}
	return accountDoc{}, bmc.Permanent(fmt.Errorf("account %q: %w", id, bmc.ErrAccountNotFound))
}

// UpdateAccount implements [bmc.AccountManager]: one PATCH of the account
// with exactly the fields set (the password with the rest). A BMC that
// wants the password with a role or enabled change (400 PropertyMissing
// naming Password) fails with an error wrapping bmc.ErrPasswordRequired;
// nothing is re-sent.
func (d *Driver) UpdateAccount(ctx context.Context, id string, u bmc.AccountUpdate) error {
	op := "update account " + strconv.Quote(id)
	if err := u.Validate(); err != nil {
		return d.opErr(op, bmc.Permanent(err))
	}
	var pw string
	if u.Password != nil {
		pw = *u.Password
	}
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	if err := d.updateAccount(ctx, id, u); err != nil {
		return d.opErr(op, scrubPasswords(err, pw))
	}
	return nil
}

func (d *Driver) updateAccount(ctx context.Context, id string, u bmc.AccountUpdate) error {
	a, err := d.findAccount(ctx, id)
	if err != nil {
		return err
	}
	body := map[string]any{}
	if u.Password != nil {
		body["Password"] = *u.Password
	}
	if u.Role != nil {
		body["RoleId"] = string(*u.Role)
	}
	if u.Enabled != nil {
		body["Enabled"] = *u.Enabled
	}
	err = d.patch(ctx, a.uri, body, "")
	switch {
	case err == nil:
		return nil
	case notFound(err):
		return bmc.Permanent(fmt.Errorf("account %q is gone: %w: %w", id, bmc.ErrAccountNotFound, err))
	case u.Password == nil && passwordMissing(err):
		return bmc.Permanent(fmt.Errorf("%w: %w", bmc.ErrPasswordRequired, err))
	}
	return err
}

// passwordMissing reports whether err is a 400 PropertyMissing about the
// Password.
func passwordMissing(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusBadRequest &&
		strings.Contains(se.MessageID, "PropertyMissing") && strings.Contains(se.Message, "Password")
}

// DeleteAccount implements [bmc.AccountManager]: DELETE of the account;
// a BMC that answers 405 (fixed slots) has the slot emptied by one PATCH
// of UserName "" (Dell: a local user is deleted by setting its name to
// null).
func (d *Driver) DeleteAccount(ctx context.Context, id string) error {
	op := "delete account " + strconv.Quote(id)
	done, err := d.begin()
	if err != nil {
		return d.opErr(op, err)
	}
	defer done()
	a, err := d.findAccount(ctx, id)
	if err != nil {
		return d.opErr(op, err)
	}
	err = d.do(ctx, false, func(c *gofish.APIClient) error {
		resp, err := c.Delete(a.uri)
		drain(resp)
		return err
	})
	var se *StatusError
	if errors.As(err, &se) && (se.StatusCode == http.StatusMethodNotAllowed || se.StatusCode == http.StatusNotImplemented) {
		err = d.patch(ctx, a.uri, map[string]any{"UserName": ""}, "")
	}
	if err != nil {
		if notFound(err) {
			err = bmc.Permanent(fmt.Errorf("account %q is gone: %w: %w", id, bmc.ErrAccountNotFound, err))
		}
		return d.opErr(op, err)
	}
	return nil
}

// scrubPasswords takes the passwords out of err: out of the message of a
// *StatusError in its chain (BMCs echo rejected values:
// PropertyValueFormatError carries the value) and out of its text.
func scrubPasswords(err error, passwords ...string) error {
	if err == nil {
		return nil
	}
	for _, p := range passwords {
		if p == "" {
			continue
		}
		var se *StatusError
		if errors.As(err, &se) {
			se.Message = strings.ReplaceAll(se.Message, p, "<redacted>")
		}
		if msg := err.Error(); strings.Contains(msg, p) {
			err = &scrubbedError{msg: strings.ReplaceAll(msg, p, "<redacted>"), err: err}
		}
	}
	return err
}
