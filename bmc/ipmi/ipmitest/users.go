package ipmitest

import (
	"bytes"
	"context"
	"errors"
	"sync"

	gobmc "github.com/bougou/go-ipmi/pkg/bmc"
	"github.com/bougou/go-ipmi/pkg/handlers"
	"github.com/bougou/go-ipmi/pkg/types"
)

// DefaultUserSlots is the number of user IDs the simulated BMC has when
// Options.UserSlots is not set.
const DefaultUserSlots = 10

// lanChannel is the simulator's LAN channel; 0Eh ("this channel") names it
// too.
const lanChannel = 1

// users serves the IPMI user commands (IPMI v2.0 22.26-22.30), which
// go-ipmi's reference BMC keeps a store for but does not answer: Set/Get
// User Access, Set/Get User Name and Set User Password (set, test, enable,
// disable; 16- and 20-byte forms). User 1 is the null user, whose name
// cannot be set. Get User Access reports the enable state in byte 2's bits
// 7:6 (IPMI v2.0 errata 4); ipmi_sim leaves them 00b.
//
// go-ipmi's store hands out its *User to the session handlers, which read
// it while logging in. Users are therefore never changed in place: each
// change builds a new *User and replaces the old one in the store (Delete
// then Add), and a last Delete of an ID that does not exist takes the
// store's write lock, so that every later login (which takes its read
// lock) sees the finished user. Changes are serialized by mu.
type users struct {
	mu    sync.Mutex
	store *gobmc.UserStore
	slots int
}

func (u *users) register(reg *handlers.Registry) {
	reg.RegisterFunc(types.CommandGetUserAccess, u.getAccess)
	reg.RegisterFunc(types.CommandSetUserAccess, u.setAccess)
	reg.RegisterFunc(types.CommandGetUsername, u.getName)
	reg.RegisterFunc(types.CommandSetUsername, u.setName)
	reg.RegisterFunc(types.CommandSetUserPassword, u.setPassword)
}

// user returns a copy of user id (an empty, disabled one if unset).
func (u *users) user(id uint8) gobmc.User {
	cur, err := u.store.Get(id)
	if err != nil {
		return gobmc.User{ID: id, ChannelAccess: map[uint8]gobmc.UserChannelAccess{}}
	}
	c := *cur
	c.ChannelAccess = map[uint8]gobmc.UserChannelAccess{}
	for k, v := range cur.ChannelAccess {
		c.ChannelAccess[k] = v
	}
	return c
}

// errNameTaken: Set User Name with another user's name.
var errNameTaken = errors.New("name taken")

// put replaces user n.ID with n (see users).
func (u *users) put(n gobmc.User) error {
	if n.Name != "" {
		if other, err := u.store.GetByName(n.Name); err == nil && other.ID != n.ID {
			return errNameTaken
		}
	}
	_ = u.store.Delete(n.ID)
	added, err := u.store.Add(n.ID, n.Name)
	if err != nil {
		return err
	}
	added.Password, added.Enabled, added.ChannelAccess = n.Password, n.Enabled, n.ChannelAccess
	_ = u.store.Delete(0) // publish: see users
	return nil
}

func (u *users) validID(id uint8) bool { return id >= 1 && int(id) <= u.slots }

func channelOf(b byte) (uint8, bool) {
	ch := b & 0x0f
	if ch == 0x0e {
		ch = lanChannel
	}
	return ch, ch == lanChannel
}

func (u *users) getAccess(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) < 2 {
		return nil, types.CodeRequestDataTruncated, nil
	}
	ch, ok := channelOf(req[0])
	id := req[1] & 0x3f
	if !ok || !u.validID(id) {
		return nil, types.CodeRequestDataFieldInvalid, nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	enabledCount := 0
	for i := 1; i <= u.slots; i++ {
		if x := u.user(uint8(i)); x.Enabled {
			enabledCount++
		}
	}
	x := u.user(id)
	status := byte(0b10) // disabled via Set User Password
	if x.Enabled {
		status = 0b01
	}
	a := x.ChannelAccess[ch]
	b3 := byte(a.MaxPrivilege) & 0x0f
	if a.CallbackOnly {
		b3 |= 1 << 6
	}
	if a.Enabled {
		b3 |= 1<<5 | 1<<4 // link authentication and IPMI messaging
	}
	return []byte{byte(u.slots), status<<6 | byte(enabledCount)&0x3f, 1, b3}, types.CodeOK, nil
}

func (u *users) setAccess(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) < 3 {
		return nil, types.CodeRequestDataTruncated, nil
	}
	ch, ok := channelOf(req[0])
	id := req[1] & 0x3f
	priv := req[2] & 0x0f
	if !ok || !u.validID(id) || !(priv >= 1 && priv <= 5 || priv == 0x0f) {
		return nil, types.CodeRequestDataFieldInvalid, nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	x := u.user(id)
	a := x.ChannelAccess[ch]
	a.MaxPrivilege = gobmc.PrivilegeLevel(priv)
	if req[0]&0x80 != 0 { // the bits below are to be changed
		a.CallbackOnly = req[0]&0x40 != 0
		a.Enabled = req[0]&0x10 != 0 // IPMI messaging
	}
	x.ChannelAccess[ch] = a
	if err := u.put(x); err != nil {
		return nil, types.CodeUnspecifiedError, nil
	}
	return nil, types.CodeOK, nil
}

func (u *users) getName(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) < 1 {
		return nil, types.CodeRequestDataTruncated, nil
	}
	id := req[0] & 0x3f
	if !u.validID(id) {
		return nil, types.CodeRequestDataFieldInvalid, nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]byte, 16)
	copy(out, u.user(id).Name)
	return out, types.CodeOK, nil
}

func (u *users) setName(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) < 17 {
		return nil, types.CodeRequestDataTruncated, nil
	}
	id := req[0] & 0x3f
	if !u.validID(id) || id == 1 { // user 1 is the null user
		return nil, types.CodeRequestDataFieldInvalid, nil
	}
	name := string(bytes.TrimRight(req[1:17], "\x00"))
	u.mu.Lock()
	defer u.mu.Unlock()
	x := u.user(id)
	x.Name = name
	if err := u.put(x); err != nil {
		return nil, types.CodeRequestDataFieldInvalid, nil
	}
	return nil, types.CodeOK, nil
}

func (u *users) setPassword(_ context.Context, _ *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) < 2 {
		return nil, types.CodeRequestDataTruncated, nil
	}
	id := req[0] & 0x3f
	size := 16
	if req[0]&0x80 != 0 {
		size = 20
	}
	if !u.validID(id) {
		return nil, types.CodeRequestDataFieldInvalid, nil
	}
	op := req[1] & 0x03
	if (op == 2 || op == 3) && len(req) < 2+size {
		return nil, types.CodeRequestDataLengthInvalid, nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	x := u.user(id)
	switch op {
	case 0:
		x.Enabled = false
	case 1:
		x.Enabled = true
	case 2:
		x.SetPassword(req[2 : 2+size])
	case 3:
		if !x.VerifyPassword(req[2 : 2+size]) {
			return nil, 0x80, nil // password test failed: wrong password size or value
		}
		return nil, types.CodeOK, nil
	}
	if err := u.put(x); err != nil {
		return nil, types.CodeUnspecifiedError, nil
	}
	return nil, types.CodeOK, nil
}
