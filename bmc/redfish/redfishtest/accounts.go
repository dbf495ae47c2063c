package redfishtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"
)

// AccountsConfig selects the AccountService's personality. The zero value
// is the DMTF mockup's shape (public-rackmount1): accounts created by POST
// and removed by DELETE, MinPasswordLength 8, no lock-out.
type AccountsConfig struct {
	// None leaves the AccountService out (bmc.CapabilityAccounts).
	None bool
	// FixedSlots, when set, holds accounts in this many slots, as iDRAC
	// (16) and Lenovo XCC on Purley (12) do: members "1" .. FixedSlots are
	// always listed, an empty one with UserName "", RoleId "None" and
	// Enabled false (iDRAC's empty slot, from memory); POST to the
	// collection and DELETE of an account are answered 405; an account is
	// created by a PATCH of an empty slot carrying UserName, Password and
	// RoleId, and removed by a PATCH of UserName "". Slot 1 is the IPMI
	// anonymous user and refuses every PATCH. The Config's user is in slot
	// 2 (iDRAC's root), its Users after it. At least 2. Defaults to 0.
	FixedSlots int
	// PasswordInPatch answers a PATCH of an existing account that changes
	// RoleId or Enabled without carrying Password with 400
	// Base.1.8.PropertyMissing naming Password (docs/vendors.md row 7: an
	// iDRAC; the answer's shape is written from memory).
	PasswordInPatch bool
	// MinPasswordLength and MaxPasswordLength are the AccountService's;
	// a password outside them is answered 400
	// Base.1.8.PropertyValueFormatError, whose message echoes the value as
	// BMCs do (a driver must scrub it). Default to 8 (the DMTF mockup) and
	// 0 (not reported, not enforced).
	MinPasswordLength, MaxPasswordLength int
	// LockoutThreshold failed logins (session creation or basic auth) lock
	// an account (Locked true; even its right password is refused) for
	// LockoutDuration on Config.Clock, or until a PATCH sets Locked false
	// or a new Password. The DMTF mockup reports 5 and 30 s. Defaults to 0:
	// no lock-out.
	LockoutThreshold int
	// LockoutDuration: see LockoutThreshold. Defaults to 0: locked until
	// unlocked by a PATCH.
	LockoutDuration time.Duration
}

const (
	accountServiceURI = root + "/AccountService"
	accountsURI       = accountServiceURI + "/Accounts"
	rolesURI          = accountServiceURI + "/Roles"
)

// simRoles are the roles the simulated BMC has (the Redfish predefined
// roles), plus "None", the role of iDRAC's empty slots.
var simRoles = []string{"Administrator", "Operator", "ReadOnly", "NoAccess"}

// simAccounts are the accounts, guarded by Server.mu.
type simAccounts struct {
	list []*simAccount // in ID order
	next int           // the next ID to hand out (without FixedSlots)
}

// simAccount is one account (or, with FixedSlots, one slot).
type simAccount struct {
	id, user, password, role string
	enabled, locked          bool
	failures                 int
	lockedUntil              time.Time
	lockouts                 int // times locked since the server started
}

func (a *simAccount) empty() bool { return a.user == "" }

// AccountState is a snapshot of one account of the simulated BMC, for
// assertions. It never holds the password (see [Server.AccountPasswordIs]).
type AccountState struct {
	ID, UserName, RoleID string
	Enabled, Locked      bool
	// Lockouts counts the times failed logins locked the account since the
	// server started, also those a later unlock (a PATCH, LockoutDuration)
	// ended: a test that must show no lock-out at any moment reads it.
	Lockouts int
}

// initAccounts seeds the accounts from Config.Username/Password (Users
// after it, by name). Called from start.
func (s *Server) initAccounts() {
	names := make([]string, 0, len(s.cfg.Users))
	for u := range s.cfg.Users {
		if u != "" && u != s.cfg.Username {
			names = append(names, u)
		}
	}
	sort.Strings(names)
	first := 1
	if n := s.cfg.Accounts.FixedSlots; n > 0 {
		for i := 1; i <= n; i++ {
			s.accounts.list = append(s.accounts.list, &simAccount{id: strconv.Itoa(i), role: "None"})
		}
		first = 2
	}
	put := func(i int, user, pw string) {
		a := &simAccount{id: strconv.Itoa(first + i), user: user, password: pw, role: "Administrator", enabled: true}
		if s.cfg.Accounts.FixedSlots > 0 {
			if first+i > len(s.accounts.list) {
				panic("redfishtest: Config.Users do not fit in AccountsConfig.FixedSlots")
			}
			s.accounts.list[first+i-1] = a
			return
		}
		s.accounts.list = append(s.accounts.list, a)
	}
	put(0, s.cfg.Username, s.cfg.Password)
	for i, u := range names {
		put(i+1, u, s.cfg.Users[u])
	}
	s.accounts.next = len(s.accounts.list) + 1
}

// validUser checks a login against the accounts, counting failures
// toward the lock-out.
func (s *Server) validUser(user, password string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accountNamed(user)
	if a == nil || user == "" {
		return false
	}
	now := s.now()
	if a.locked && !a.lockedUntil.IsZero() && !now.Before(a.lockedUntil) {
		a.locked, a.failures = false, 0
	}
	if a.locked {
		return false
	}
	if a.password != password {
		a.failures++
		if t := s.cfg.Accounts.LockoutThreshold; t > 0 && a.failures >= t {
			a.locked = true
			a.lockouts++
			if d := s.cfg.Accounts.LockoutDuration; d > 0 {
				a.lockedUntil = now.Add(d)
			}
		}
		return false
	}
	if !a.enabled {
		return false
	}
	a.failures = 0
	return true
}

func (s *Server) accountNamed(user string) *simAccount {
	for _, a := range s.accounts.list {
		if !a.empty() && a.user == user {
			return a
		}
	}
	return nil
}

func (s *Server) accountByID(id string) *simAccount {
	for _, a := range s.accounts.list {
		if a.id == id {
			return a
		}
	}
	return nil
}

// Accounts returns the accounts (every slot, empty ones included, with
// FixedSlots), in ID order.
func (s *Server) Accounts() []AccountState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AccountState, 0, len(s.accounts.list))
	for _, a := range s.accounts.list {
		out = append(out, AccountState{ID: a.id, UserName: a.user, RoleID: a.role, Enabled: a.enabled, Locked: a.locked, Lockouts: a.lockouts})
	}
	return out
}

// AccountPasswordIs reports whether the account named user has password.
func (s *Server) AccountPasswordIs(user, password string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accountNamed(user)
	return a != nil && a.password == password
}

func (s *Server) accountRoutes(handle func(method, path string, h http.HandlerFunc)) {
	if s.cfg.Accounts.None {
		return
	}
	handle("GET", accountServiceURI, s.auth(s.getAccountService))
	handle("GET", accountsURI, s.auth(s.listAccounts))
	handle("POST", accountsURI, s.auth(s.createAccount))
	handle("GET", accountsURI+"/{id}", s.auth(s.getAccount))
	handle("PATCH", accountsURI+"/{id}", s.auth(s.patchAccount))
	handle("DELETE", accountsURI+"/{id}", s.auth(s.deleteAccount))
	handle("GET", rolesURI, s.auth(s.listRoles))
	handle("GET", rolesURI+"/{id}", s.auth(s.getRole))
}

// accountLinks adds the AccountService to the service root.
func (s *Server) accountLinks(doc map[string]any) {
	if !s.cfg.Accounts.None {
		doc["AccountService"] = link(accountServiceURI)
	}
}

func (s *Server) getAccountService(w http.ResponseWriter, _ *http.Request) {
	c := s.cfg.Accounts
	doc := map[string]any{
		"@odata.id": accountServiceURI, "@odata.type": "#AccountService.v1_12_0.AccountService",
		"Id": "AccountService", "Name": "Account Service", "ServiceEnabled": true,
		"Status":            map[string]any{"State": "Enabled", "Health": "OK"},
		"MinPasswordLength": c.MinPasswordLength, "AccountLockoutThreshold": c.LockoutThreshold,
		"AccountLockoutDuration": int(c.LockoutDuration / time.Second), "LocalAccountAuth": "Enabled",
		"Accounts": link(accountsURI), "Roles": link(rolesURI),
	}
	if c.MaxPasswordLength > 0 {
		doc["MaxPasswordLength"] = c.MaxPasswordLength
	}
	writeJSON(w, http.StatusOK, "", doc)
}

func (s *Server) listAccounts(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	var members []any
	for _, a := range s.accounts.list {
		members = append(members, link(accountsURI+"/"+a.id))
	}
	s.mu.Unlock()
	writeCollection(w, accountsURI, "ManagerAccountCollection", "Accounts Collection", members)
}

func accountDoc(a *simAccount) map[string]any {
	return map[string]any{
		"@odata.id": accountsURI + "/" + a.id, "@odata.type": "#ManagerAccount.v1_10_0.ManagerAccount",
		"Id": a.id, "Name": "User Account", "Description": "User Account",
		"UserName": a.user, "Password": nil, "RoleId": a.role, "Enabled": a.enabled, "Locked": a.locked,
		"AccountTypes": []string{"Redfish"},
		"Links":        map[string]any{"Role": link(rolesURI + "/" + a.role)},
	}
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.accountByID(r.PathValue("id"))
	var doc map[string]any
	if a != nil {
		doc = accountDoc(a)
	}
	s.mu.Unlock()
	if doc == nil {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no account at "+r.URL.Path)
		return
	}
	writeJSON(w, http.StatusOK, "", doc)
}

// accountBody is what POST and PATCH may carry; pointers tell absent from
// empty.
type accountBody struct {
	UserName, Password, RoleID *string
	Enabled, Locked            *bool
}

// decodeAccountBody reads a body, refusing properties it does not know
// (as strict BMCs do) with the property named.
func decodeAccountBody(w http.ResponseWriter, r *http.Request) (accountBody, bool) {
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "the account body is not a JSON object")
		return accountBody{}, false
	}
	var b accountBody
	for k, v := range raw {
		var dst any
		switch k {
		case "UserName":
			dst = &b.UserName
		case "Password":
			dst = &b.Password
		case "RoleId":
			dst = &b.RoleID
		case "Enabled":
			dst = &b.Enabled
		case "Locked":
			dst = &b.Locked
		default:
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyUnknown", "The property "+k+" is not in the list of valid properties for the resource.")
			return accountBody{}, false
		}
		if err := json.Unmarshal(v, dst); err != nil {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "The value for the property "+k+" is of a different type than the property can accept.")
			return accountBody{}, false
		}
	}
	return b, true
}

// checkAccountFields validates the fields set in b; it answers and
// returns false on the first bad one. Called with s.mu held.
func (s *Server) checkAccountFields(w http.ResponseWriter, b accountBody, self *simAccount) bool {
	c := s.cfg.Accounts
	if b.Password != nil {
		n := len(*b.Password)
		if n < c.MinPasswordLength || (c.MaxPasswordLength > 0 && n > c.MaxPasswordLength) {
			// Echoes the value, as BMCs' PropertyValueFormatError does.
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueFormatError",
				"The value '"+*b.Password+"' for the property Password is of a different format than the property can accept.")
			return false
		}
	}
	if b.RoleID != nil && !slices.Contains(simRoles, *b.RoleID) {
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", "The value "+*b.RoleID+" for the property RoleId is not in the list of acceptable values.")
		return false
	}
	if b.UserName != nil && *b.UserName != "" {
		if other := s.accountNamed(*b.UserName); other != nil && other != self {
			redfishError(w, http.StatusBadRequest, "Base.1.8.ResourceAlreadyExists", "An account named "+*b.UserName+" exists.")
			return false
		}
	}
	return true
}

func (s *Server) createAccount(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Accounts.FixedSlots > 0 {
		w.Header().Set("Allow", "GET")
		redfishError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", "accounts are in fixed slots: PATCH an empty one")
		return
	}
	b, ok := decodeAccountBody(w, r)
	if !ok {
		return
	}
	for name, v := range map[string]*string{"UserName": b.UserName, "Password": b.Password, "RoleId": b.RoleID} {
		if v == nil || *v == "" {
			redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyMissing", "The property "+name+" is a required property and must be included in the request.")
			return
		}
	}
	s.mu.Lock()
	if !s.checkAccountFields(w, b, nil) {
		s.mu.Unlock()
		return
	}
	a := &simAccount{id: strconv.Itoa(s.accounts.next), user: *b.UserName, password: *b.Password, role: *b.RoleID, enabled: true}
	if b.Enabled != nil {
		a.enabled = *b.Enabled
	}
	s.accounts.next++
	s.accounts.list = append(s.accounts.list, a)
	s.stateChanged(r, "", "account created")
	doc := accountDoc(a)
	s.mu.Unlock()
	w.Header().Set("Location", accountsURI+"/"+a.id)
	writeJSON(w, http.StatusCreated, "", doc)
}

func (s *Server) patchAccount(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeAccountBody(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accountByID(r.PathValue("id"))
	if a == nil {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no account at "+r.URL.Path)
		return
	}
	fixed := s.cfg.Accounts.FixedSlots > 0
	switch {
	case fixed && a.id == "1":
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "account 1 is the anonymous IPMI user and cannot be changed")
		return
	case b.UserName != nil && *b.UserName == "" && !fixed:
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyValueFormatError", "The value '' for the property UserName is of a different format than the property can accept.")
		return
	case a.empty() && (b.UserName == nil || *b.UserName == "" || b.Password == nil):
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyMissing", "The property UserName and Password are required to fill an empty account slot.")
		return
	case s.cfg.Accounts.PasswordInPatch && !a.empty() && b.Password == nil && (b.RoleID != nil || b.Enabled != nil):
		redfishError(w, http.StatusBadRequest, "Base.1.8.PropertyMissing", "The property Password is a required property and must be included in the request.")
		return
	}
	if !s.checkAccountFields(w, b, a) {
		return
	}
	if b.UserName != nil && *b.UserName == "" {
		// A fixed slot emptied: iDRAC deletes a user by a null name.
		*a = simAccount{id: a.id, role: "None"}
		s.stateChanged(r, "", "account slot emptied")
		writeJSON(w, http.StatusOK, "", accountDoc(a))
		return
	}
	wasEmpty := a.empty()
	if b.UserName != nil {
		a.user = *b.UserName
	}
	if b.Password != nil {
		a.password, a.locked, a.failures, a.lockedUntil = *b.Password, false, 0, time.Time{}
	}
	if b.RoleID != nil {
		a.role = *b.RoleID
	}
	if b.Enabled != nil {
		a.enabled = *b.Enabled
	} else if wasEmpty {
		a.enabled = true
	}
	if b.Locked != nil && !*b.Locked {
		a.locked, a.failures, a.lockedUntil = false, 0, time.Time{}
	}
	s.stateChanged(r, "", "account changed")
	writeJSON(w, http.StatusOK, "", accountDoc(a))
}

func (s *Server) deleteAccount(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Accounts.FixedSlots > 0 {
		w.Header().Set("Allow", "GET, PATCH")
		redfishError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", "accounts are in fixed slots: PATCH UserName to empty the slot")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.accounts.list, func(a *simAccount) bool { return a.id == r.PathValue("id") })
	if i < 0 {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no account at "+r.URL.Path)
		return
	}
	s.accounts.list = slices.Delete(s.accounts.list, i, i+1)
	s.stateChanged(r, "", "account deleted")
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listRoles(w http.ResponseWriter, _ *http.Request) {
	var members []any
	for _, r := range simRoles {
		members = append(members, link(rolesURI+"/"+r))
	}
	writeCollection(w, rolesURI, "RoleCollection", "Roles Collection", members)
}

func (s *Server) getRole(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !slices.Contains(simRoles, id) {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no role at "+r.URL.Path)
		return
	}
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": rolesURI + "/" + id, "@odata.type": "#Role.v1_3_1.Role",
		"Id": id, "Name": id + " Role", "RoleId": id, "IsPredefined": true,
	})
}

// redactPasswords replaces the value of every top-level "Password" of a
// JSON object body with "<redacted>", for the request log; other bodies
// are returned as they are.
func redactPasswords(body []byte) []byte {
	if !bytes.Contains(body, []byte(`"Password"`)) {
		return body
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		// Not an object: keep nothing rather than a password.
		return []byte(`<unparsed body with "Password" redacted>`)
	}
	if _, ok := m["Password"]; ok {
		m["Password"] = json.RawMessage(`"<redacted>"`)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return []byte(`<unparsed body with "Password" redacted>`)
	}
	return out
}
