package redfish

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

func TestDecodeRealAccounts(t *testing.T) {
	b, err := os.ReadFile("testdata/accounts/dmtf-accountservice.json")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := decodeAccountService(b)
	if err != nil {
		t.Fatal(err)
	}
	want := bmc.PasswordPolicy{MinLength: 8, LockoutThreshold: 5, LockoutDuration: 30 * time.Second}
	if svc.policy != want || svc.accounts != "/redfish/v1/AccountService/Accounts" {
		t.Errorf("DMTF AccountService: %+v; want policy %+v and the Accounts link", svc, want)
	}

	b, err = os.ReadFile("testdata/accounts/dmtf-account-1.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := decodeAccount("/redfish/v1/AccountService/Accounts/1", b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (bmc.Account{ID: "1", UserName: "Administrator", Role: bmc.RoleAdministrator, Enabled: true}); a.Account != want || a.empty() {
		t.Errorf("DMTF account 1: %+v; want %+v", a.Account, want)
	}

	// Lenovo XCC (Purley) after its PATCH-create: an OEM role among the
	// allowed values, Enabled false as printed (trimmed, see the README).
	xcc := `{"RoleId@Redfish.AllowableValues":["Administrator","Operator","ReadOnly","CustomRole2"],"UserName":"TempUser",
		"Id":"2","Name":"User2","AccountTypes":["Redfish"],"@odata.id":"/redfish/v1/AccountService/Accounts/2","RoleId":"Administrator",
		"Locked":false,"Enabled":false,"@odata.type":"#ManagerAccount.v1_6_0.ManagerAccount","Password":null}`
	a, err = decodeAccount("/redfish/v1/AccountService/Accounts/2", []byte(xcc))
	if err != nil {
		t.Fatal(err)
	}
	if want := (bmc.Account{ID: "2", UserName: "TempUser", Role: bmc.RoleAdministrator}); a.Account != want {
		t.Errorf("XCC account 2: %+v; want %+v", a.Account, want)
	}

	// iDRAC's empty slot (from memory): empty, its role kept as the BMC's word.
	a, err = decodeAccount("/redfish/v1/AccountService/Accounts/5", []byte(`{"Id":"5","UserName":"","RoleId":"None","Enabled":false,"Locked":false,"Password":null}`))
	if err != nil || !a.empty() || a.Role != "None" {
		t.Errorf("iDRAC empty slot: %+v, %v; want an empty slot with role None", a, err)
	}
}

func TestDecodeAccountsRefusesNonsense(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `{`, "not valid JSON"},
		{"no Accounts link", `{"Id":"AccountService"}`, "no Accounts collection"},
		{"min over max", `{"Accounts":{"@odata.id":"/a"},"MinPasswordLength":30,"MaxPasswordLength":20}`, "MinPasswordLength 30 is over its MaxPasswordLength 20"},
	} {
		if _, err := decodeAccountService([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := decodeAccount("", []byte(`{"UserName":"x"}`)); err == nil || !strings.Contains(err.Error(), "no Id") {
		t.Errorf("an account without Id at a path without one: %v", err)
	}
}

func FuzzDecodeAccountService(f *testing.F) {
	f.Add([]byte(`{"Accounts":{"@odata.id":"/redfish/v1/AccountService/Accounts"},"MinPasswordLength":8,"AccountLockoutThreshold":5,"AccountLockoutDuration":30}`))
	f.Add([]byte(`{"Accounts":{"@odata.id":"/a"},"MinPasswordLength":30,"MaxPasswordLength":20}`))
	f.Add([]byte(`{"AccountLockoutDuration":18446744073709551615,"Accounts":{"@odata.id":"/a"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		svc, err := decodeAccountService(b)
		if err != nil {
			return
		}
		p := svc.policy
		if p.MinLength < 0 || p.MaxLength < 0 || p.LockoutThreshold < 0 || p.LockoutDuration < 0 || (p.MaxLength > 0 && p.MinLength > p.MaxLength) {
			t.Fatalf("decoded an impossible policy %+v", p)
		}
		if svc.accounts == "" {
			t.Fatalf("decoded an AccountService without its Accounts link")
		}
	})
}

func FuzzDecodeAccount(f *testing.F) {
	f.Add([]byte(`{"Id":"1","UserName":"Administrator","RoleId":"Administrator","Enabled":true,"Locked":false,"Password":null}`))
	f.Add([]byte(`{"Id":"5","UserName":"","RoleId":"None","Enabled":false}`))
	f.Add([]byte(`{"UserName":["x"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAccount("/redfish/v1/AccountService/Accounts/7", b)
		if err != nil {
			return
		}
		if a.ID == "" || len(a.ID) > bmc.MaxInventoryString || len(a.UserName) > bmc.MaxInventoryString || len(a.Role) > bmc.MaxInventoryString {
			t.Fatalf("decoded %+v: an empty ID or an unbounded string", a)
		}
	})
}
