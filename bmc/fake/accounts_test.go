package fake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/fake"
)

var fakeEP = bmc.Endpoint{Protocol: "redfish", Transport: "https", Host: "127.0.0.1"}

// The accounts part of the suite on a fake with iDRAC's shape: 16 fixed
// slots, a policy, a lock-out threshold.
func TestConformanceAccountsFixedSlots(t *testing.T) {
	// Only what accounts touch: the rest runs in TestConformance.
	skip := []string{"Power", "BootOverride", "BootHTTP", "VirtualMedia", "ResetBMC", "LastResetTime", "FirmwareUpdate",
		"Inventory", "BIOS", "Health", "Logs", "Events", "Needs", "Context", "Concurrency", "Close", "Stats"}
	bmctest.Run(t, bmctest.Options{PollInterval: time.Millisecond, Skip: skip}, func(t *testing.T) bmctest.Target {
		creds := bmc.Credentials{Username: "root", Password: "pw-Slots-secret1"}
		srv, drv := dialTarget(t, fake.Options{Username: creds.Username, Password: creds.Password,
			Accounts: fake.AccountOptions{Slots: 16, Policy: bmc.PasswordPolicy{MinLength: 8, MaxLength: 20, LockoutThreshold: 5}}})
		return bmctest.Target{Driver: drv, Credentials: creds, Dial: func(ctx context.Context, c bmc.Credentials) (bmc.Driver, error) {
			return srv.Dial(ctx, fakeEP, c)
		}}
	})
}

func accountManager(t *testing.T, opts fake.Options) (*fake.BMC, bmc.AccountManager) {
	t.Helper()
	srv, drv := dialTarget(t, opts)
	return srv, drv.(bmc.AccountManager)
}

func TestAccountsFixedSlotsFillLowestFreeAndRunOut(t *testing.T) {
	srv, am := accountManager(t, fake.Options{Username: "root", Password: "Root-pw-1", Accounts: fake.AccountOptions{Slots: 4}})
	ctx := context.Background()
	var ids []string
	for i := range 2 {
		a, err := am.CreateAccount(ctx, bmc.AccountSpec{UserName: fmt.Sprintf("u%d", i), Password: "Pw-1234x", Role: bmc.RoleOperator})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	// Slot 1 is the anonymous user, slot 2 root.
	if ids[0] != "3" || ids[1] != "4" {
		t.Fatalf("created in slots %v, want [3 4]", ids)
	}
	_, err := am.CreateAccount(ctx, bmc.AccountSpec{UserName: "u9", Password: "Pw-1234x", Role: bmc.RoleOperator})
	if !errors.Is(err, bmc.ErrNoAccountSlot) || bmc.IsTransient(err) {
		t.Fatalf("a fifth account on 4 slots: %v; want permanent ErrNoAccountSlot", err)
	}
	if err := am.DeleteAccount(ctx, "3"); err != nil {
		t.Fatal(err)
	}
	a, err := am.CreateAccount(ctx, bmc.AccountSpec{UserName: "u9", Password: "Pw-1234x", Role: bmc.RoleOperator})
	if err != nil || a.ID != "3" {
		t.Fatalf("after freeing slot 3: %+v, %v; want slot 3", a, err)
	}
	if got := len(srv.Accounts()); got != 3 {
		t.Errorf("%d accounts, want 3", got)
	}
}

func TestAccountsLockOutAfterFailedLogins(t *testing.T) {
	srv, am := accountManager(t, fake.Options{Username: "root", Password: "Root-pw-1",
		Accounts: fake.AccountOptions{Policy: bmc.PasswordPolicy{LockoutThreshold: 3}}})
	ctx := context.Background()
	a, err := am.CreateAccount(ctx, bmc.AccountSpec{UserName: "ops", Password: "Ops-pw-1", Role: bmc.RoleOperator})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := srv.Dial(ctx, fakeEP, bmc.Credentials{Username: "ops", Password: "wrong"}); !errors.Is(err, bmc.ErrUnauthorized) {
			t.Fatalf("bad login %d: %v", i, err)
		}
	}
	_, err = srv.Dial(ctx, fakeEP, bmc.Credentials{Username: "ops", Password: "Ops-pw-1"})
	if !errors.Is(err, bmc.ErrUnauthorized) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("the right password on a locked account: %v; want refused as locked", err)
	}
	list, _ := am.Accounts(ctx)
	if list[1].ID != a.ID || !list[1].Locked {
		t.Fatalf("Accounts = %+v; want ops locked", list)
	}
	// Setting the password unlocks it.
	pw := "Ops-pw-2"
	if err := am.UpdateAccount(ctx, a.ID, bmc.AccountUpdate{Password: &pw}); err != nil {
		t.Fatal(err)
	}
	d, err := srv.Dial(ctx, fakeEP, bmc.Credentials{Username: "ops", Password: pw})
	if err != nil {
		t.Fatalf("login after the password was set: %v", err)
	}
	_ = d.Close(ctx)
}

// Passwords never reach the call log, errors or Stats.
func TestAccountsPasswordsNeverLogged(t *testing.T) {
	srv, am := accountManager(t, fake.Options{Username: "root", Password: "Root-pw-1",
		Accounts: fake.AccountOptions{Policy: bmc.PasswordPolicy{MinLength: 8}}})
	ctx := context.Background()
	secrets := []string{"Leak-Check-pw1", "Leak-Check-pw2", "Sh0rt-"}
	a, err := am.CreateAccount(ctx, bmc.AccountSpec{UserName: "ops", Password: secrets[0], Role: bmc.RoleOperator})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	errs = append(errs, am.UpdateAccount(ctx, a.ID, bmc.AccountUpdate{Password: &secrets[1]}))
	errs = append(errs, am.UpdateAccount(ctx, a.ID, bmc.AccountUpdate{Password: &secrets[2]})) // under MinLength
	_, err = am.CreateAccount(ctx, bmc.AccountSpec{UserName: "ops", Password: secrets[1], Role: bmc.RoleOperator})
	errs = append(errs, err) // a duplicate
	if errs[1] == nil || errs[2] == nil {
		t.Fatalf("a short password and a duplicate name were accepted: %v", errs)
	}
	var texts []string
	for _, c := range srv.Calls() {
		texts = append(texts, c.String(), fmt.Sprintf("%+v %#v", c.Args, c.Args))
	}
	for _, e := range errs {
		if e != nil {
			texts = append(texts, e.Error(), fmt.Sprintf("%+v", e))
		}
	}
	texts = append(texts, fmt.Sprintf("%+v", am.(bmc.StatsReporter).Stats()))
	for _, s := range texts {
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("a password leaks: %s", strings.ReplaceAll(s, sec, "<password>"))
			}
		}
	}
	if !srv.AccountPassword("ops", secrets[1]) {
		t.Errorf("the fake does not hold the password that was set")
	}
}
