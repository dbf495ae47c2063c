package redfish_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// accountsOnly runs the suite's account subtests and what they lean on.
var accountsOnly = bmctest.Options{Skip: []string{"Power", "BootOverride", "BootHTTP", "VirtualMedia", "ResetBMC",
	"LastResetTime", "FirmwareUpdate", "Inventory", "BIOS", "Health", "Logs", "Events", "Needs", "Context",
	"Concurrency", "Close", "Stats"}}

// The account personalities: iDRAC's fixed slots with the password in
// every PATCH, a lock-out after 5 failed logins (the DMTF mockup's
// threshold), a BMC without an AccountService.
func TestConformanceAccounts(t *testing.T) {
	for _, p := range []struct {
		name  string
		cfg   redfishtest.Config
		suite bmctest.Options
	}{
		{name: "FixedSlotsPasswordInPatch", cfg: redfishtest.Config{Accounts: redfishtest.AccountsConfig{
			FixedSlots: 16, PasswordInPatch: true, MaxPasswordLength: 20}}},
		{name: "LockOutAfter5", cfg: redfishtest.Config{Accounts: redfishtest.AccountsConfig{
			LockoutThreshold: 5, LockoutDuration: 30 * time.Second}}},
		{name: "NoAccountService", cfg: redfishtest.Config{Accounts: redfishtest.AccountsConfig{None: true}},
			suite: bmctest.Options{Unsupported: []bmctest.Capability{bmc.CapabilityAccounts}}},
	} {
		t.Run(p.name, func(t *testing.T) {
			suite := p.suite
			suite.Skip = accountsOnly.Skip
			bmctest.Run(t, suite, func(t *testing.T) bmctest.Target {
				srv, dialer := startSim(t, p.cfg, testOptions(), false)
				ep := srv.Endpoint("")
				drv, err := dialer.Dial(t.Context(), ep, srv.Credentials())
				if err != nil {
					t.Fatal(err)
				}
				return bmctest.Target{Driver: drv, Credentials: srv.Credentials(),
					Dial: func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) { return dialer.Dial(ctx, ep, c) }}
			})
		})
	}
}

// A changed password takes effect for new sessions and for basic auth: the
// new one logs in, the old one is refused; the session that changed it
// goes on.
func TestAccountPasswordChangeTakesEffect(t *testing.T) {
	for _, sessions := range []redfishtest.SessionMode{redfishtest.SessionsCreatedWithBody, redfishtest.SessionsNone} {
		t.Run(fmt.Sprint(sessions), func(t *testing.T) {
			srv, dialer := startSim(t, redfishtest.Config{Sessions: sessions}, testOptions(), false)
			ctx := context.Background()
			old := srv.Credentials()
			drv, err := dialer.DialDriver(ctx, srv.Endpoint(""), old)
			if err != nil {
				t.Fatal(err)
			}
			defer drv.Close(ctx)
			list, err := drv.Accounts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].UserName != old.Username || list[0].Role != bmc.RoleAdministrator || list[0].ID != "1" {
				t.Fatalf("Accounts = %+v; want the one administrator", list)
			}
			pw := "New-Admin-pw-42"
			if err := drv.UpdateAccount(ctx, "1", bmc.AccountUpdate{Password: &pw}); err != nil {
				t.Fatal(err)
			}
			if sessions == redfishtest.SessionsCreatedWithBody {
				if _, err := drv.PowerState(ctx); err != nil {
					t.Errorf("the session that changed its own password: %v", err)
				}
			}
			fresh, err := dialer.Dial(ctx, srv.Endpoint(""), bmc.Credentials{Username: old.Username, Password: pw})
			if err != nil {
				t.Fatalf("the new password: %v", err)
			}
			_ = fresh.Close(ctx)
			_, err = dialer.Dial(ctx, srv.Endpoint(""), old)
			if !errors.Is(err, bmc.ErrUnauthorized) {
				t.Fatalf("the old password: %v; want ErrUnauthorized", err)
			}
			// The same on the wire, without the driver.
			req, _ := http.NewRequest("GET", srv.URL()+"/redfish/v1/Systems", nil)
			for p, want := range map[string]int{pw: 200, old.Password: 401} {
				req.SetBasicAuth(old.Username, p)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("basic auth with the %s password: %d, want %d", map[bool]string{true: "new", false: "old"}[p == pw], resp.StatusCode, want)
				}
			}
		})
	}
}

// iDRAC's shape on the wire: create is a PATCH of the lowest empty slot
// (not 1, not root's 2), delete a 405 then a PATCH of UserName "".
func TestAccountsFixedSlotsOnTheWire(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{Accounts: redfishtest.AccountsConfig{FixedSlots: 16}}, testOptions(), "", false)
	ctx := context.Background()
	p, err := drv.PasswordPolicy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxAccounts != 16 || p.MinLength != 8 {
		t.Errorf("PasswordPolicy = %+v; want 16 slots, MinLength 8", p)
	}
	srv.ClearRequests()
	a, err := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: "ops", Password: "Ops-pw-123", Role: bmc.RoleOperator})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "3" || a.Role != bmc.RoleOperator || !a.Enabled {
		t.Fatalf("CreateAccount = %+v; want slot 3, Operator, enabled", a)
	}
	var changes []redfishtest.Request
	for _, r := range srv.Requests() {
		if r.Method != "GET" {
			changes = append(changes, r)
		}
	}
	if len(changes) != 1 || changes[0].Method != "PATCH" || changes[0].Path != "/redfish/v1/AccountService/Accounts/3" {
		t.Fatalf("requests that change state: %+v; want one PATCH of slot 3", changes)
	}
	if b := changes[0].Body; strings.Contains(b, "Ops-pw-123") || !strings.Contains(b, `"Password":"\u003credacted\u003e"`) && !strings.Contains(b, `"Password":"<redacted>"`) {
		t.Errorf("the logged PATCH body is %s; want the password redacted", b)
	}
	if !srv.AccountPasswordIs("ops", "Ops-pw-123") {
		t.Errorf("the simulator does not hold the new account's password")
	}
	srv.ClearRequests()
	if err := drv.DeleteAccount(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, r := range srv.Requests() {
		if r.Method != "GET" {
			seen = append(seen, fmt.Sprintf("%s %s %d %s", r.Method, r.Path, r.Status, r.Body))
		}
	}
	want := []string{"DELETE /redfish/v1/AccountService/Accounts/3 405 ", `PATCH /redfish/v1/AccountService/Accounts/3 200 {"UserName":""}`}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("delete sent %q, want %q", seen, want)
	}
	if st := srv.Accounts()[2]; st.UserName != "" || st.Enabled {
		t.Errorf("slot 3 after delete: %+v; want empty", st)
	}
	// Every slot full: ErrNoAccountSlot, after one refused POST.
	for i := 3; i <= 16; i++ {
		if _, err := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: fmt.Sprintf("u%d", i), Password: "Fill-pw-123", Role: bmc.RoleReadOnly}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = drv.CreateAccount(ctx, bmc.AccountSpec{UserName: "one-more", Password: "Fill-pw-123", Role: bmc.RoleReadOnly})
	if !errors.Is(err, bmc.ErrNoAccountSlot) {
		t.Fatalf("a 16th account in 16 slots (slot 1 reserved): %v; want ErrNoAccountSlot", err)
	}
}

// docs/vendors.md row 7: a BMC that takes a role or enabled change only
// with the password. The driver sends one PATCH, gets ErrPasswordRequired
// naming what to do, and the same change with the password goes through.
func TestAccountUpdateNeedsPassword(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{Accounts: redfishtest.AccountsConfig{FixedSlots: 16, PasswordInPatch: true}}, testOptions(), "", false)
	ctx := context.Background()
	pw := "Ops-pw-123"
	a, err := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: "ops", Password: pw, Role: bmc.RoleReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	srv.ClearRequests()
	role := bmc.RoleOperator
	err = drv.UpdateAccount(ctx, a.ID, bmc.AccountUpdate{Role: &role})
	if !errors.Is(err, bmc.ErrPasswordRequired) || bmc.IsTransient(err) || !strings.Contains(err.Error(), "AccountUpdate.Password") {
		t.Fatalf("a role change without the password: %v; want permanent ErrPasswordRequired naming AccountUpdate.Password", err)
	}
	patches := 0
	for _, r := range srv.Requests() {
		if r.Method == "PATCH" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d PATCHes for one refused update; want 1 (nothing re-sent)", patches)
	}
	if err := drv.UpdateAccount(ctx, a.ID, bmc.AccountUpdate{Role: &role, Password: &pw}); err != nil {
		t.Fatal(err)
	}
	if st := srv.Accounts()[2]; st.RoleID != "Operator" {
		t.Errorf("after the update with the password: %+v", st)
	}
}

// No password in errors (the simulator echoes a rejected one, as BMCs do),
// logs, Stats or the simulator's request log.
func TestAccountPasswordsNeverLeak(t *testing.T) {
	var mu sync.Mutex
	var logs strings.Builder
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs.WriteString(prefix + args + "\n")
	}, funcr.Options{Verbosity: 10})
	opts := testOptions()
	opts.Logger = log
	srv, drv := dialSim(t, redfishtest.Config{Accounts: redfishtest.AccountsConfig{MaxPasswordLength: 20}}, opts, "", false)
	ctx := context.Background()
	good, short, long := "Good-pw-4711", "Sh0rt-x", "Far-Too-Long-pw-4711-xyz"
	var errs []error
	_, err := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: "ops", Password: short, Role: bmc.RoleOperator})
	errs = append(errs, err)
	a, err := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: "ops", Password: good, Role: bmc.RoleOperator})
	if err != nil {
		t.Fatal(err)
	}
	errs = append(errs, drv.UpdateAccount(ctx, a.ID, bmc.AccountUpdate{Password: &long}))
	for i, e := range errs {
		if e == nil {
			t.Fatalf("error %d: a password outside 8..20 was accepted", i)
		}
		if !strings.Contains(e.Error(), "PropertyValueFormatError") {
			t.Errorf("error %d does not say what the BMC refused: %v", i, e)
		}
		var se *redfish.StatusError
		if errors.As(e, &se) && (strings.Contains(se.Message, short) || strings.Contains(se.Message, long)) {
			t.Errorf("the StatusError in the chain keeps the echoed password: %s", se.Message)
		}
	}
	var texts []string
	for _, e := range errs {
		texts = append(texts, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
	}
	for _, r := range srv.Requests() {
		texts = append(texts, fmt.Sprintf("%+v", r))
	}
	texts = append(texts, fmt.Sprintf("%+v", drv.Stats()))
	mu.Lock()
	texts = append(texts, logs.String())
	mu.Unlock()
	for _, s := range texts {
		for _, p := range []string{good, short, long} {
			if strings.Contains(s, p) {
				t.Errorf("a password leaks: %s", strings.ReplaceAll(s, p, "<password>"))
			}
		}
	}
}

// Five failed logins lock the account (the DMTF mockup's policy), and the
// policy says so; a password change unlocks it.
func TestAccountLockOut(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{Users: map[string]string{"ops": "Ops-pw-123"},
		Accounts: redfishtest.AccountsConfig{LockoutThreshold: 5, LockoutDuration: 30 * time.Second}}, testOptions(), "", false)
	ctx := context.Background()
	p, err := drv.PasswordPolicy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.LockoutThreshold != 5 || p.LockoutDuration != 30*time.Second {
		t.Errorf("PasswordPolicy = %+v; want lock-out 5 / 30s", p)
	}
	dialer := redfish.NewDialer(testOptions())
	for range 5 {
		if _, err := dialer.Dial(ctx, srv.Endpoint(""), bmc.Credentials{Username: "ops", Password: "wrong-pw-1"}); !errors.Is(err, bmc.ErrUnauthorized) {
			t.Fatalf("a wrong password: %v", err)
		}
	}
	if _, err := dialer.Dial(ctx, srv.Endpoint(""), bmc.Credentials{Username: "ops", Password: "Ops-pw-123"}); !errors.Is(err, bmc.ErrUnauthorized) {
		t.Fatalf("the right password on a locked account: %v; want refused", err)
	}
	list, err := drv.Accounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[1].UserName != "ops" || !list[1].Locked {
		t.Fatalf("Accounts = %+v; want ops locked", list)
	}
	pw := "Ops-pw-456"
	if err := drv.UpdateAccount(ctx, list[1].ID, bmc.AccountUpdate{Password: &pw}); err != nil {
		t.Fatal(err)
	}
	d, err := dialer.Dial(ctx, srv.Endpoint(""), bmc.Credentials{Username: "ops", Password: pw})
	if err != nil {
		t.Fatalf("after the password change: %v", err)
	}
	_ = d.Close(ctx)
	// The unlock does not hide that the account was locked.
	for _, a := range srv.Accounts() {
		if want := map[string]int{"ops": 1}[a.UserName]; a.Locked || a.Lockouts != want {
			t.Errorf("account %s: Locked %v, Lockouts %d; want unlocked, %d lock-outs", a.UserName, a.Locked, a.Lockouts, want)
		}
	}
}
