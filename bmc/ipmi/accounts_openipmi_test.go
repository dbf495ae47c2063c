package ipmi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// ipmitoolRoles maps ipmitool's "Channel Priv Limit" column to roles.
var ipmitoolRoles = map[string]bmc.Role{
	"ADMINISTRATOR": bmc.RoleAdministrator, "OPERATOR": bmc.RoleOperator, "USER": bmc.RoleReadOnly,
	"CALLBACK": bmc.RoleCallback, "NO ACCESS": bmc.RoleNoAccess, "Unknown (0x00)": bmc.RoleNoAccess,
}

// ipmitoolUsers parses "ipmitool user list 1": the named users, ID to
// "name role".
func ipmitoolUsers(t *testing.T, out string) map[string]string {
	t.Helper()
	users := map[string]string{}
	for _, line := range strings.Split(out, "\n")[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		// ID, name (16 columns, may be empty), Callin, Link Auth, IPMI Msg, Priv.
		f := strings.Fields(line)
		if len(f) < 5 {
			t.Fatalf("ipmitool user list: cannot parse %q", line)
		}
		name := strings.TrimSpace(line[4:min(len(line), 21)])
		if name == "" {
			continue
		}
		// The privilege is what follows the third true/false column.
		rest := line[21:]
		for range 3 {
			rest = strings.TrimSpace(rest)
			rest = rest[strings.IndexAny(rest, " \t")+1:]
		}
		role, ok := ipmitoolRoles[strings.TrimSpace(rest)]
		if !ok {
			t.Fatalf("ipmitool user list: unknown privilege %q in %q", strings.TrimSpace(rest), line)
		}
		users[f[0]] = name + " " + string(role)
	}
	return users
}

// What the driver lists is what "ipmitool user list 1" shows, against
// OpenIPMI's ipmi_sim, after the driver created accounts with each role.
func TestAccountsMatchIpmitool(t *testing.T) {
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	d := dialer(t, unlimited(sim.DialOptions()))
	ctx := context.Background()
	drv, err := d.Open(ctx, sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(ctx)
	for i, r := range []bmc.Role{bmc.RoleOperator, bmc.RoleReadOnly, bmc.RoleNoAccess} {
		if _, err := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: "u" + string(rune('a'+i)) + strings.ToLower(string(r)), Password: "Pw-1234-x", Role: r}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := drv.Accounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range list {
		got[a.ID] = a.UserName + " " + string(a.Role)
	}
	want := ipmitoolUsers(t, runIpmitool(t, sim, "user", "list", "1"))
	if len(want) != 4 || len(got) != len(want) {
		t.Fatalf("the driver lists %v, ipmitool %v; want the administrator and 3 new accounts in both", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("user %s: the driver reads %q, ipmitool shows %q", id, got[id], w)
		}
	}
	p, err := drv.PasswordPolicy(ctx)
	if err != nil || p.MaxAccounts != 63 || p.MaxLength != 16 {
		t.Errorf("PasswordPolicy = %+v, %v; want ipmi_sim's 63 user IDs and 16 bytes", p, err)
	}
}

// A password the driver sets lets ipmitool log in with it, and the old one
// no longer does: for a new account and for the administrator the driver
// is logged in as.
func TestAccountPasswordSetByDriverWorksForIpmitool(t *testing.T) {
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	d := dialer(t, unlimited(sim.DialOptions()))
	ctx := context.Background()
	drv, err := d.Open(ctx, sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(ctx)
	canLogIn := func(c bmc.Credentials) bool {
		_, err := ipmitoolAt(t, sim.Endpoint, c, "chassis", "power", "status")
		return err == nil
	}

	ops := bmc.Credentials{Username: "ops", Password: "Ops-pw-1234"}
	a, err := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: ops.Username, Password: ops.Password, Role: bmc.RoleAdministrator})
	if err != nil {
		t.Fatal(err)
	}
	if !canLogIn(ops) {
		t.Fatalf("ipmitool cannot log in as the account the driver created")
	}
	newOps := bmc.Credentials{Username: "ops", Password: "Ops-pw-16-bytesX"} // the policy's longest
	if err := drv.UpdateAccount(ctx, a.ID, bmc.AccountUpdate{Password: &newOps.Password}); err != nil {
		t.Fatal(err)
	}
	if !canLogIn(newOps) || canLogIn(ops) {
		t.Errorf("after the change: new password logs in %v, old %v; want true, false", canLogIn(newOps), canLogIn(ops))
	}

	// The administrator's own password, changed on its own session.
	list, err := drv.Accounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var adminID string
	for _, x := range list {
		if x.UserName == sim.Credentials.Username {
			adminID = x.ID
		}
	}
	admin := bmc.Credentials{Username: sim.Credentials.Username, Password: "Adm-pw-5678"}
	if err := drv.UpdateAccount(ctx, adminID, bmc.AccountUpdate{Password: &admin.Password}); err != nil {
		t.Fatal(err)
	}
	if !canLogIn(admin) || canLogIn(sim.Credentials) {
		t.Errorf("the administrator after the change: new logs in %v, old %v; want true, false", canLogIn(admin), canLogIn(sim.Credentials))
	}
	// The driver's own session goes on.
	if _, err := drv.PowerState(ctx); err != nil {
		t.Errorf("the session that changed its own password: %v", err)
	}
	// And the driver logs in with it too.
	fresh, err := d.Open(ctx, sim.Endpoint, admin)
	if err != nil {
		t.Fatalf("dial with the new administrator password: %v", err)
	}
	_ = fresh.Close(ctx)
}

// Passwords IPMI cannot hold and roles it has no level for are refused
// before a request, naming the limit, never the password.
func TestAccountsRefusedBeforeSending(t *testing.T) {
	sim := ipmitest.NewServer(t, ipmitest.Options{})
	d := dialer(t, ipmi.Options{RequestsPerSecond: -1})
	ctx := context.Background()
	drv, err := d.Open(ctx, sim.Endpoint, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close(ctx)
	before := drv.Stats().Requests
	long := "Way-Too-Long-For-IPMI-21b"
	_, err1 := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: "ops", Password: long, Role: bmc.RoleOperator})
	custom := bmc.Role("CustomRole2")
	err2 := drv.UpdateAccount(ctx, "2", bmc.AccountUpdate{Role: &custom})
	_, err3 := drv.CreateAccount(ctx, bmc.AccountSpec{UserName: "a-name-over-16-bytes", Password: "Pw-1234-x", Role: bmc.RoleOperator})
	for i, tc := range []struct {
		err  error
		want string
	}{{err1, "at most 20"}, {err2, `role "CustomRole2"`}, {err3, "at most 16"}} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) || bmc.IsTransient(tc.err) {
			t.Errorf("case %d: %v; want a permanent error naming %q", i, tc.err, tc.want)
		}
		if tc.err != nil && strings.Contains(tc.err.Error(), long) {
			t.Errorf("case %d leaks the password: %v", i, tc.err)
		}
	}
	if n := drv.Stats().Requests - before; n != 0 {
		t.Errorf("%d requests sent for refused calls; want 0", n)
	}
}
