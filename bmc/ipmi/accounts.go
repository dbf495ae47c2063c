package ipmi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/app"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

var _ bmc.AccountManager = (*Driver)(nil)

// portablePassword is the longest password every IPMI BMC takes (the
// 16-byte form of Set User Password).
const portablePassword = 16

// currentChannel is IPMI's "this channel" (0Eh): the LAN channel the
// session runs on, whatever its number on this BMC.
const currentChannel = 0x0e

// Privilege levels (IPMI v2.0 table 22-28) and the roles they read as.
var privRoles = []struct {
	priv uint8
	role bmc.Role
}{
	{0x04, bmc.RoleAdministrator},
	{0x03, bmc.RoleOperator},
	{0x02, bmc.RoleReadOnly}, // USER
	{0x01, bmc.RoleCallback},
	{0x0f, bmc.RoleNoAccess},
}

func roleOfPriv(p uint8) bmc.Role {
	for _, r := range privRoles {
		if r.priv == p {
			return r.role
		}
	}
	// 00h and the reserved values: ipmi_sim reports 00h for users never
	// given channel access ("Unknown (0x00)" in ipmitool): no access.
	return bmc.RoleNoAccess
}

func privOfRole(r bmc.Role) (uint8, error) {
	for _, pr := range privRoles {
		if pr.role == r {
			return pr.priv, nil
		}
	}
	return 0, bmc.Permanent(fmt.Errorf("role %q has no IPMI privilege level: want Administrator, Operator, ReadOnly (USER), Callback or NoAccess", r))
}

// userAccess is a Get User Access reply, decoded.
type userAccess struct {
	maxUsers int
	enabled  bool // the user may log in (see decodeUserAccess)
	priv     uint8
	msg      bool // IPMI messaging enabled
	link     bool // link authentication enabled
	callback bool // restricted to callback
}

// decodeUserAccess decodes a Get User Access reply (IPMI v2.0 22.27).
// Byte 2's bits 7:6 say whether Set User Password enabled (01b) or
// disabled (10b) the user; BMCs before errata 4 (ipmi_sim) leave them 00b,
// and then a user with IPMI messaging on counts as enabled (ipmi_sim
// clears it when a user is disabled).
func decodeUserAccess(b []byte) (userAccess, error) {
	var r app.GetUserAccessResponse
	if err := r.Unpack(b); err != nil {
		return userAccess{}, bmc.Permanent(fmt.Errorf("decode the Get User Access reply: %w", err))
	}
	a := userAccess{maxUsers: int(r.MaxUsersIDCount & 0x3f), priv: uint8(r.MaxPrivLevel), msg: r.IPMIMessagingEnabled,
		link: r.LinkAuthEnabled, callback: r.CallbackOnly}
	switch r.EnableStatus {
	case 0b01:
		a.enabled = true
	case 0b10:
		a.enabled = false
	default:
		a.enabled = a.msg
	}
	return a, nil
}

// decodeUserName decodes a Get User Name reply: 16 bytes, NUL padded.
// Bytes that are not UTF-8 are replaced, so a name is always printable
// in an error.
func decodeUserName(b []byte) (string, error) {
	var r app.GetUsernameResponse
	if err := r.Unpack(b); err != nil {
		return "", bmc.Permanent(fmt.Errorf("decode the Get User Name reply: %w", err))
	}
	name := strings.TrimRight(r.Username, "\x00")
	if !utf8.ValidString(name) {
		name = strings.ToValidUTF8(name, "?")
	}
	return name, nil
}

func (d *Driver) getUserAccess(ctx context.Context, c *client.Client, id int) (userAccess, error) {
	var raw rawResponse
	if err := d.exchange(ctx, c, &app.GetUserAccessRequest{ChannelNumber: currentChannel, UserID: uint8(id)}, &raw); err != nil {
		return userAccess{}, fmt.Errorf("Get User Access for user %d: %w", id, err)
	}
	return decodeUserAccess(raw.data)
}

func (d *Driver) getUserName(ctx context.Context, c *client.Client, id int) (string, error) {
	var raw rawResponse
	if err := d.exchange(ctx, c, &app.GetUsernameRequest{UserID: uint8(id)}, &raw); err != nil {
		// Some BMCs answer a user ID that has never been set with "data
		// not present" rather than an empty name; ipmi_sim answers the
		// null user (1), whose name is fixed empty, with "invalid data
		// field".
		if re, ok := types.IsResponseError(err); ok && (re.CompletionCode() == types.CodeRequestedDataNotPresent ||
			id == 1 && re.CompletionCode() == types.CodeRequestDataFieldInvalid) {
			return "", nil
		}
		return "", fmt.Errorf("Get User Name for user %d: %w", id, err)
	}
	return decodeUserName(raw.data)
}

// slot is one user ID as read: its name and access.
type slot struct {
	id     int
	name   string
	access userAccess
}

func (s slot) account() bmc.Account {
	return bmc.Account{ID: strconv.Itoa(s.id), UserName: s.name, Role: roleOfPriv(s.access.priv), Enabled: s.access.enabled}
}

// readSlots reads every user ID's name, and the access of the named ones:
// Get User Access for user 1 gives the number of IDs.
func (d *Driver) readSlots(ctx context.Context, c *client.Client) (int, []slot, error) {
	first, err := d.getUserAccess(ctx, c, 1)
	if err != nil {
		return 0, nil, err
	}
	n := first.maxUsers
	var out []slot
	for id := 1; id <= n; id++ {
		name, err := d.getUserName(ctx, c, id)
		if err != nil {
			return 0, nil, err
		}
		s := slot{id: id, name: name}
		if name != "" {
			if id == 1 {
				s.access = first
			} else if s.access, err = d.getUserAccess(ctx, c, id); err != nil {
				return 0, nil, err
			}
		}
		out = append(out, s)
	}
	return n, out, nil
}

// Accounts implements [bmc.AccountManager]: every user ID with a name
// (Get User Name for each of the channel's IDs, Get User Access for the
// named ones, on the session's channel), the role its privilege limit.
func (d *Driver) Accounts(ctx context.Context) ([]bmc.Account, error) {
	var out []bmc.Account
	err := d.do(ctx, "list accounts", func(ctx context.Context, c *client.Client) error {
		_, slots, err := d.readSlots(ctx, c)
		if err != nil {
			return err
		}
		for _, s := range slots {
			if s.name != "" {
				out = append(out, s.account())
			}
		}
		return nil
	})
	return out, err
}

// PasswordPolicy implements [bmc.AccountManager]: at most 16 bytes, the
// user IDs as fixed slots (one Get User Access). IPMI v2.0 leaves 20-byte
// passwords optional and there is no request that says whether a BMC has
// them: ipmi_sim takes the 20-byte form of Set User Password and then
// refuses the login. 16 bytes is what every IPMI BMC takes, so that is
// what a password generated to this policy fits; UpdateAccount still
// sends up to 20 for a caller who knows the BMC.
func (d *Driver) PasswordPolicy(ctx context.Context) (bmc.PasswordPolicy, error) {
	var p bmc.PasswordPolicy
	err := d.do(ctx, "read password policy", func(ctx context.Context, c *client.Client) error {
		a, err := d.getUserAccess(ctx, c, 1)
		p = bmc.PasswordPolicy{MaxLength: portablePassword, MaxAccounts: a.maxUsers}
		return err
	})
	return p, err
}

func checkIPMIAccount(name string, password *string) error {
	if len(name) > maxUserName {
		return bmc.Permanent(fmt.Errorf("the user name is %d bytes; IPMI allows at most %d", len(name), maxUserName))
	}
	if password != nil && len(*password) > maxPassword {
		return bmc.Permanent(fmt.Errorf("the password is %d bytes; IPMI v2.0 allows at most %d", len(*password), maxPassword))
	}
	return nil
}

// setPassword sends Set User Password: the 16-byte form for passwords of
// up to 16 bytes (what every IPMI BMC takes), else the 20-byte form.
func (d *Driver) setPassword(ctx context.Context, c *client.Client, id int, pw string) error {
	req := &app.SetUserPasswordRequest{UserID: uint8(id), Operation: app.PasswordOperationSetPassword, Password: pw, Stored20: len(pw) > 16}
	if err := d.exchange(ctx, c, req, &app.SetUserPasswordResponse{}); err != nil {
		return fmt.Errorf("Set User Password for user %d: %w", id, err)
	}
	return nil
}

func (d *Driver) setEnabled(ctx context.Context, c *client.Client, id int, on bool) error {
	op := app.PasswordOperationDisableUser
	if on {
		op = app.PasswordOperationEnableUser
	}
	if err := d.exchange(ctx, c, &app.SetUserPasswordRequest{UserID: uint8(id), Operation: op}, &app.SetUserPasswordResponse{}); err != nil {
		return fmt.Errorf("enable or disable user %d: %w", id, err)
	}
	return nil
}

// setAccess sends Set User Access on the session's channel: the privilege
// limit, IPMI messaging and link authentication on when msg is set.
func (d *Driver) setAccess(ctx context.Context, c *client.Client, id int, priv uint8, msg bool) error {
	req := &app.SetUserAccessRequest{EnableChanging: true, EnableLinkAuth: msg, EnableIPMIMessaging: msg,
		ChannelNumber: currentChannel, UserID: uint8(id), MaxPrivLevel: priv}
	if err := d.exchange(ctx, c, req, &app.SetUserAccessResponse{}); err != nil {
		return fmt.Errorf("Set User Access for user %d: %w", id, err)
	}
	return nil
}

func (d *Driver) setName(ctx context.Context, c *client.Client, id int, name string) error {
	if err := d.exchange(ctx, c, &app.SetUsernameRequest{UserID: uint8(id), Username: name}, &app.SetUsernameResponse{}); err != nil {
		return fmt.Errorf("Set User Name for user %d: %w", id, err)
	}
	return nil
}

// CreateAccount implements [bmc.AccountManager] on the lowest user ID
// (other than 1, the null user) without a name: Set User Password, Set
// User Access (privilege, IPMI messaging), enable (or disable), and the
// name last, so that a slot is never named with a password other than
// the one asked for. The account is read back.
func (d *Driver) CreateAccount(ctx context.Context, spec bmc.AccountSpec) (bmc.Account, error) {
	op := "create account " + strconv.Quote(spec.UserName)
	if err := spec.Validate(); err != nil {
		return bmc.Account{}, &bmc.OpError{Op: op, Endpoint: d.epStr, Err: bmc.Permanent(err)}
	}
	priv, err := privOfRole(spec.Role)
	if err == nil {
		err = checkIPMIAccount(spec.UserName, &spec.Password)
	}
	if err != nil {
		return bmc.Account{}, &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err}
	}
	var out bmc.Account
	err = d.do(ctx, op, func(ctx context.Context, c *client.Client) error {
		n, slots, err := d.readSlots(ctx, c)
		if err != nil {
			return err
		}
		id := 0
		for _, s := range slots {
			if s.name == spec.UserName {
				return bmc.Permanent(fmt.Errorf("an account named %q exists (ID %d)", spec.UserName, s.id))
			}
			if s.name == "" && s.id > 1 && id == 0 {
				id = s.id
			}
		}
		if id == 0 {
			return bmc.Permanent(fmt.Errorf("all %d user IDs have names: %w", n, bmc.ErrNoAccountSlot))
		}
		steps := []func() error{
			func() error { return d.setPassword(ctx, c, id, spec.Password) },
			func() error { return d.setAccess(ctx, c, id, priv, !spec.Disabled) },
			func() error { return d.setEnabled(ctx, c, id, !spec.Disabled) },
			func() error { return d.setName(ctx, c, id, spec.UserName) },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		s, err := d.readSlot(ctx, c, id)
		out = s.account()
		return err
	})
	return out, err
}

func (d *Driver) readSlot(ctx context.Context, c *client.Client, id int) (slot, error) {
	name, err := d.getUserName(ctx, c, id)
	if err != nil {
		return slot{}, err
	}
	a, err := d.getUserAccess(ctx, c, id)
	return slot{id: id, name: name, access: a}, err
}

// namedSlot parses id and reads the user; no name is ErrAccountNotFound.
func (d *Driver) namedSlot(ctx context.Context, c *client.Client, id string) (slot, error) {
	n, err := strconv.Atoi(id)
	if err != nil || n < 1 || n > 63 {
		return slot{}, bmc.Permanent(fmt.Errorf("account %q (IPMI user IDs are 1 to 63): %w", id, bmc.ErrAccountNotFound))
	}
	first, err := d.getUserAccess(ctx, c, 1)
	if err != nil {
		return slot{}, err
	}
	if n > first.maxUsers {
		return slot{}, bmc.Permanent(fmt.Errorf("account %q (this BMC has user IDs 1 to %d): %w", id, first.maxUsers, bmc.ErrAccountNotFound))
	}
	s, err := d.readSlot(ctx, c, n)
	if err != nil {
		return slot{}, err
	}
	if s.name == "" {
		return slot{}, bmc.Permanent(fmt.Errorf("account %q has no name (an empty user ID): %w", id, bmc.ErrAccountNotFound))
	}
	return s, nil
}

// UpdateAccount implements [bmc.AccountManager]: Set User Password for a
// password, Set User Access for a role (keeping IPMI messaging as it is),
// Set User Password's enable or disable for Enabled (with IPMI messaging
// and link authentication switched to match). IPMI has no single request
// for these: a failure part-way leaves the earlier ones done; the call is
// idempotent, so repeat it.
func (d *Driver) UpdateAccount(ctx context.Context, id string, u bmc.AccountUpdate) error {
	op := "update account " + strconv.Quote(id)
	if err := u.Validate(); err != nil {
		return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: bmc.Permanent(err)}
	}
	var priv uint8
	var err error
	if u.Role != nil {
		priv, err = privOfRole(*u.Role)
	}
	if err == nil {
		err = checkIPMIAccount("", u.Password)
	}
	if err != nil {
		return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err}
	}
	return d.do(ctx, op, func(ctx context.Context, c *client.Client) error {
		s, err := d.namedSlot(ctx, c, id)
		if err != nil {
			return err
		}
		if u.Password != nil {
			if err := d.setPassword(ctx, c, s.id, *u.Password); err != nil {
				return err
			}
		}
		msg := s.access.msg
		if u.Enabled != nil {
			msg = *u.Enabled
		}
		if u.Role == nil {
			priv = s.access.priv
		}
		if u.Role != nil || msg != s.access.msg {
			if err := d.setAccess(ctx, c, s.id, priv, msg); err != nil {
				return err
			}
		}
		if u.Enabled != nil {
			return d.setEnabled(ctx, c, s.id, *u.Enabled)
		}
		return nil
	})
}

// DeleteAccount implements [bmc.AccountManager]: IPMI cannot remove a
// user ID, so the user is disabled, its channel access set to NO ACCESS
// without IPMI messaging, its password replaced by a random one nobody
// holds, and its name cleared last (a crash part-way leaves a named,
// disabled account, listed, to delete again).
func (d *Driver) DeleteAccount(ctx context.Context, id string) error {
	op := "delete account " + strconv.Quote(id)
	pw, err := bmc.GeneratePassword(bmc.PasswordPolicy{MaxLength: maxPassword})
	if err != nil {
		return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err}
	}
	return d.do(ctx, op, func(ctx context.Context, c *client.Client) error {
		s, err := d.namedSlot(ctx, c, id)
		if err != nil {
			return err
		}
		steps := []func() error{
			func() error { return d.setEnabled(ctx, c, s.id, false) },
			func() error { return d.setAccess(ctx, c, s.id, 0x0f, false) },
			func() error { return d.setPassword(ctx, c, s.id, pw) },
			func() error { return d.setName(ctx, c, s.id, "") },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	})
}
