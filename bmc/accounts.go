package bmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Role is an account's role: one of the Role constants, or the BMC's own
// role id where it has others (a Redfish OEM RoleId such as "CustomRole2",
// iDRAC's "None"), kept as the BMC's word.
type Role string

// Standard roles, in Redfish's words (the roles the Redfish specification
// predefines). IPMI maps its privilege levels to them: ADMINISTRATOR,
// OPERATOR, USER (RoleReadOnly) and NO ACCESS; CALLBACK reads as RoleCallback.
const (
	RoleAdministrator Role = "Administrator"
	RoleOperator      Role = "Operator"
	RoleReadOnly      Role = "ReadOnly"
	RoleNoAccess      Role = "NoAccess"
	// RoleCallback is IPMI's CALLBACK privilege level (no Redfish role).
	RoleCallback Role = "Callback"
)

// Account is one local account of the BMC, as [AccountManager.Accounts]
// lists it. It never holds a password.
type Account struct {
	// ID names the account on the BMC: the Redfish member's Id ("2"), the
	// IPMI user ID in decimal ("2"). Update and delete take it.
	ID string `json:"id"`
	// UserName is the name the account logs in with.
	UserName string `json:"userName"`
	// Role is the account's role (Redfish RoleId; IPMI: the channel's
	// privilege limit).
	Role Role `json:"role,omitempty"`
	// Enabled reports whether the account may log in.
	Enabled bool `json:"enabled"`
	// Locked reports whether the BMC locked the account after failed
	// logins (Redfish Locked). Always false on IPMI.
	Locked bool `json:"locked,omitempty"`
}

// PasswordPolicy is what a BMC says about the passwords and accounts it
// accepts. A zero field means the BMC does not say.
type PasswordPolicy struct {
	// MinLength and MaxLength bound a password's length in bytes
	// (Redfish AccountService.MinPasswordLength and MaxPasswordLength;
	// IPMI: at most 20).
	MinLength int `json:"minLength,omitempty"`
	MaxLength int `json:"maxLength,omitempty"`
	// LockoutThreshold is how many failed logins lock an account
	// (AccountService.AccountLockoutThreshold); 0: none reported.
	LockoutThreshold int `json:"lockoutThreshold,omitempty"`
	// LockoutDuration is how long a locked account stays locked
	// (AccountService.AccountLockoutDuration); 0: not reported.
	LockoutDuration time.Duration `json:"lockoutDuration,omitempty"`
	// MaxAccounts is the number of account slots on a BMC that holds
	// accounts in fixed slots (iDRAC: 16; IPMI: the channel's user IDs);
	// 0: not fixed, or not reported.
	MaxAccounts int `json:"maxAccounts,omitempty"`
}

// Check reports whether password fits the policy's lengths. The error
// names the lengths, never the password.
func (p PasswordPolicy) Check(password string) error {
	n := len(password)
	if p.MinLength > 0 && n < p.MinLength {
		return fmt.Errorf("the password is %d bytes; the BMC wants at least %d (PasswordPolicy.MinLength)", n, p.MinLength)
	}
	if p.MaxLength > 0 && n > p.MaxLength {
		return fmt.Errorf("the password is %d bytes; the BMC takes at most %d (PasswordPolicy.MaxLength)", n, p.MaxLength)
	}
	return nil
}

// AccountSpec is a new account for [AccountManager.CreateAccount]. Its
// String, Format, JSON and slog forms redact the password.
type AccountSpec struct {
	// UserName is the new account's name. Required.
	UserName string
	// Password is its password. Required: drivers never make one up (see
	// [GeneratePassword], which the caller runs first, so that it can store
	// the password before the BMC holds it).
	Password string
	// Role is its role. Required.
	Role Role
	// Disabled creates the account disabled. Defaults to false: enabled.
	Disabled bool
}

// Validate checks the fields every driver needs; the error names the
// field.
func (s AccountSpec) Validate() error {
	switch {
	case strings.TrimSpace(s.UserName) == "":
		return errors.New("AccountSpec.UserName is empty")
	case s.Password == "":
		return errors.New("AccountSpec.Password is empty (generate one with bmc.GeneratePassword)")
	case s.Role == "":
		return errors.New("AccountSpec.Role is empty: name the role (e.g. bmc.RoleAdministrator)")
	}
	return nil
}

// String redacts the password.
func (s AccountSpec) String() string {
	return fmt.Sprintf("{UserName:%s Password:%s Role:%s Disabled:%t}", s.UserName, redacted, s.Role, s.Disabled)
}

// GoString redacts the password (for %#v).
func (s AccountSpec) GoString() string {
	return fmt.Sprintf("bmc.AccountSpec{UserName:%q, Password:%q, Role:%q, Disabled:%t}", s.UserName, redacted, s.Role, s.Disabled)
}

// Format makes every verb print the redacted form.
func (s AccountSpec) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, s.String(), s.GoString())
}

// MarshalJSON redacts the password.
func (s AccountSpec) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		UserName string `json:"userName"`
		Password string `json:"password"`
		Role     Role   `json:"role"`
		Disabled bool   `json:"disabled,omitempty"`
	}{s.UserName, redacted, s.Role, s.Disabled})
}

// LogValue redacts the password for log/slog.
func (s AccountSpec) LogValue() slog.Value {
	return slog.GroupValue(slog.String("userName", s.UserName), slog.String("password", redacted),
		slog.String("role", string(s.Role)), slog.Bool("disabled", s.Disabled))
}

// AccountUpdate is a change of an account for
// [AccountManager.UpdateAccount]: the fields that are set change, the
// others stay. Its String, Format, JSON and slog forms redact the password.
type AccountUpdate struct {
	// Password, when set, is the new password.
	Password *string
	// Role, when set, is the new role.
	Role *Role
	// Enabled, when set, enables or disables the account.
	Enabled *bool
}

// Empty reports whether u changes nothing.
func (u AccountUpdate) Empty() bool { return u.Password == nil && u.Role == nil && u.Enabled == nil }

// Validate checks u; the error names the field.
func (u AccountUpdate) Validate() error {
	switch {
	case u.Empty():
		return errors.New("AccountUpdate changes nothing: set Password, Role or Enabled")
	case u.Password != nil && *u.Password == "":
		return errors.New("AccountUpdate.Password is empty")
	case u.Role != nil && *u.Role == "":
		return errors.New("AccountUpdate.Role is empty")
	}
	return nil
}

func (u AccountUpdate) fields() []string {
	var f []string
	if u.Password != nil {
		f = append(f, "Password:"+redacted)
	}
	if u.Role != nil {
		f = append(f, "Role:"+string(*u.Role))
	}
	if u.Enabled != nil {
		f = append(f, fmt.Sprintf("Enabled:%t", *u.Enabled))
	}
	return f
}

// String lists the fields set, the password redacted.
func (u AccountUpdate) String() string { return "{" + strings.Join(u.fields(), " ") + "}" }

// GoString lists the fields set, the password redacted (for %#v).
func (u AccountUpdate) GoString() string { return "bmc.AccountUpdate" + u.String() }

// Format makes every verb print the redacted form.
func (u AccountUpdate) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, u.String(), u.GoString())
}

// MarshalJSON redacts the password.
func (u AccountUpdate) MarshalJSON() ([]byte, error) {
	var pw *string
	if u.Password != nil {
		r := redacted
		pw = &r
	}
	return json.Marshal(struct {
		Password *string `json:"password,omitempty"`
		Role     *Role   `json:"role,omitempty"`
		Enabled  *bool   `json:"enabled,omitempty"`
	}{pw, u.Role, u.Enabled})
}

// LogValue redacts the password for log/slog.
func (u AccountUpdate) LogValue() slog.Value { return slog.StringValue(u.String()) }

func formatRedacted(f fmt.State, verb rune, s, gos string) {
	if verb == 'v' && f.Flag('#') {
		_, _ = fmt.Fprint(f, gos)
		return
	}
	_, _ = fmt.Fprint(f, s)
}

// ErrAccountNotFound reports that no account has the ID asked for.
// Permanent.
var ErrAccountNotFound = errors.New("no such account on the BMC")

// ErrPasswordRequired reports that the BMC refused an account change
// because its request did not carry the password (an iDRAC that takes a
// role or enabled change only with the password in the same PATCH; see
// docs/vendors.md). Pass AccountUpdate.Password with the change.
// Permanent.
var ErrPasswordRequired = errors.New("the BMC takes this account change only with the password in the same request: set AccountUpdate.Password too")

// ErrNoAccountSlot reports that a BMC that holds accounts in fixed slots
// has no empty one left. Permanent.
var ErrNoAccountSlot = errors.New("the BMC has no free account slot")

// AccountManager is implemented by drivers that can manage the BMC's local
// accounts (Redfish AccountService; IPMI user commands). Every method is
// safe for concurrent use, and every error is a *OpError that never
// contains a password, the one being set included. A BMC without account
// management fails every call with an error wrapping [ErrNotSupported]
// ([CapabilityAccounts]).
//
// A changed password takes effect for new sessions: dial again to prove it.
// The driver's own session is not re-authenticated.
type AccountManager interface {
	// Accounts lists the BMC's accounts, empty slots of a fixed-slot BMC
	// left out, in the BMC's order. It changes nothing.
	Accounts(ctx context.Context) ([]Account, error)
	// PasswordPolicy reads what the BMC says about passwords and account
	// slots. It changes nothing.
	PasswordPolicy(ctx context.Context) (PasswordPolicy, error)
	// CreateAccount creates an account (on a fixed-slot BMC: fills the
	// lowest free slot other than 1) and returns it as the BMC lists it.
	// Not idempotent: a second call with the same name fails (or, on a BMC
	// that allows duplicate names, creates another); callers that may
	// repeat it list the accounts first. No free slot is ErrNoAccountSlot.
	CreateAccount(ctx context.Context, spec AccountSpec) (Account, error)
	// UpdateAccount changes the fields of u that are set, in one request
	// where the protocol allows (the password with the rest). Idempotent.
	// An unknown id is ErrAccountNotFound; a BMC that wants the password
	// with the change is ErrPasswordRequired.
	UpdateAccount(ctx context.Context, id string, u AccountUpdate) error
	// DeleteAccount removes the account (on a fixed-slot BMC: empties its
	// slot). Deleting an account that is not there is ErrAccountNotFound.
	DeleteAccount(ctx context.Context, id string) error
}
