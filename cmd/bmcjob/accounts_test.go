package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// accounts list prints the BMC's accounts, as a table and as JSON, and no
// password of any of them, in any output.
func TestAccountsList(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{Users: map[string]string{"operator": "Operator-pass-1"}})
	defer srv.Close()
	c := srv.Credentials()
	secrets := []string{c.Password, "Operator-pass-1"}

	stdout, stderr, err := runIO(t, c.Password, "accounts", "list", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")
	if err != nil {
		t.Fatalf("accounts list: %v\n%s%s", err, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(stdout, "admin") || !strings.Contains(stdout, "operator") {
		t.Errorf("accounts list: want a header and 2 accounts:\n%s", stdout)
	}
	assertNoSecret(t, secrets, stdout, stderr)

	stdout, stderr, err = runIO(t, c.Password, "accounts", "list", "-json", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")
	var got []bmc.Account
	if err != nil || json.Unmarshal([]byte(stdout), &got) != nil {
		t.Fatalf("accounts list -json: %v\n%s", err, stdout)
	}
	if len(got) != 2 || got[0].UserName != "admin" || got[0].Role != bmc.RoleAdministrator || !got[0].Enabled {
		t.Errorf("accounts list -json: %+v", got)
	}
	assertNoSecret(t, secrets, stdout, stderr)
	if srv.ActiveSessions() != 0 {
		t.Errorf("%d sessions left open", srv.ActiveSessions())
	}

	// A wrong password: one message, no password in it.
	stdout, stderr, err = runIO(t, "Wrong-pass-99", "accounts", "list", "-bmc", srv.Address("1"), "-user", c.Username, "-insecure")
	if err == nil {
		t.Fatalf("accounts list with a wrong password succeeded:\n%s", stdout)
	}
	assertNoSecret(t, append(secrets, "Wrong-pass-99"), stdout, stderr, err.Error())

	out, err := runOut(t, "", "accounts", "list", "-simulate")
	if err != nil || !strings.Contains(out, "admin") || !strings.Contains(out, "Administrator") {
		t.Errorf("accounts list -simulate: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"accounts"}, {"accounts", "delete", "2"}} {
		if _, err := runOut(t, "", append(args, "-simulate")...); err == nil || !strings.Contains(err.Error(), "accounts: want list") {
			t.Errorf("bmcjob %s: %v", strings.Join(args, " "), err)
		}
	}
}
