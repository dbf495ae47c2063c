package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
)

func fileCreds(t *testing.T, path, ref string) bmc.Credentials {
	t.Helper()
	s, err := bmc.OpenFileCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, pending, _ := s.Pending(context.Background(), ref); pending {
		t.Errorf("pending credentials left in %s after the rotation", path)
	}
	return c
}

// rotate on redfishtest: the first run enrols -user/$BMC_PASSWORD in the
// file and rotates; later runs read the file alone. The BMC takes each new
// password, the old one stops working, and no password (old or new) is in
// standard output, standard error, -json or the error.
func TestRotateAgainstRedfishtest(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	defer srv.Close()
	orig := srv.Credentials()
	file := filepath.Join(t.TempDir(), "bmc-credentials.json")
	addr := srv.Address("1")
	secrets := []string{orig.Password}

	stdout, stderr, err := runIO(t, orig.Password, "rotate", "-credentials-file", file, "-bmc", addr, "-user", orig.Username, "-insecure")
	if err != nil {
		t.Fatalf("rotate: %v\n%s%s", err, stdout, stderr)
	}
	first := fileCreds(t, file, addr)
	secrets = append(secrets, first.Password)
	if first.Username != "admin" || first.Password == orig.Password || !srv.AccountPasswordIs("admin", first.Password) || srv.AccountPasswordIs("admin", orig.Password) {
		t.Fatalf("after rotate: the file holds user %q, the BMC takes the new password: %t, the old: %t",
			first.Username, srv.AccountPasswordIs("admin", first.Password), srv.AccountPasswordIs("admin", orig.Password))
	}
	if !strings.Contains(stdout, "Succeeded") || !strings.Contains(stdout, `the new credentials of user "admin" are in `+file+` as "`+addr+`"`) {
		t.Errorf("rotate does not say where the credentials are:\n%s", stdout)
	}
	assertNoSecret(t, secrets, stdout, stderr)

	// Second rotation, -json, from the file alone (no -user, no $BMC_PASSWORD).
	stdout, stderr, err = runIO(t, "", "rotate", "-json", "-credentials-file", file, "-bmc", addr, "-insecure")
	var st job.Status
	if err != nil || json.Unmarshal([]byte(stdout), &st) != nil || st.Result != conditions.ResultSucceeded || st.Tasks[0].Rotation == nil {
		t.Fatalf("rotate -json: %v\n%s%s", err, stdout, stderr)
	}
	second := fileCreds(t, file, addr)
	secrets = append(secrets, second.Password)
	if second.Password == first.Password || !srv.AccountPasswordIs("admin", second.Password) {
		t.Fatal("the second rotation did not change the password on the BMC and in the file")
	}
	assertNoSecret(t, secrets, stdout, stderr)

	// The other commands log in with the file: accounts list works without
	// $BMC_PASSWORD, and prints no password either.
	stdout, stderr, err = runIO(t, "", "accounts", "list", "-json", "-credentials-file", file, "-bmc", addr, "-insecure")
	if err != nil || !strings.Contains(stdout, `"userName": "admin"`) {
		t.Fatalf("accounts list with -credentials-file: %v\n%s%s", err, stdout, stderr)
	}
	assertNoSecret(t, secrets, stdout, stderr)

	// Blue/green: a new account, the old one deleted.
	stdout, stderr, err = runIO(t, "", "rotate", "-mode", "account", "-new-user", "ops", "-credentials-file", file, "-bmc", addr, "-insecure")
	if err != nil {
		t.Fatalf("rotate -mode account: %v\n%s%s", err, stdout, stderr)
	}
	third := fileCreds(t, file, addr)
	secrets = append(secrets, third.Password)
	var names []string
	for _, a := range srv.Accounts() {
		names = append(names, a.UserName)
	}
	if third.Username != "ops" || !srv.AccountPasswordIs("ops", third.Password) || strings.Join(names, ",") != "ops" {
		t.Errorf("after rotate -mode account: file user %q, BMC accounts %v; want ops alone", third.Username, names)
	}
	if !strings.Contains(stdout, `the new credentials of user "ops"`) {
		t.Errorf("rotate -mode account output:\n%s", stdout)
	}
	assertNoSecret(t, secrets, stdout, stderr)
}

// A rotation interrupted after the BMC took the new password leaves it
// pending in the file: a read falls back to it (bmc.PendingFallback) and
// works, and a mismatch between the file and -user or $BMC_PASSWORD is an
// error that names the flag and prints neither password.
func TestCredentialsFilePendingAndConflicts(t *testing.T) {
	srv := redfishtest.NewTLSServer(redfishtest.Config{})
	defer srv.Close()
	real := srv.Credentials()
	file := filepath.Join(t.TempDir(), "creds.json")
	addr := srv.Address("1")
	store, err := bmc.OpenFileCredentials(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stale := bmc.Credentials{Username: real.Username, Password: "Stale-pass-1"}
	if err := store.Set(ctx, "bmc-a", stale); err != nil {
		t.Fatal(err)
	}
	if err := store.SetPending(ctx, "bmc-a", real); err != nil {
		t.Fatal(err)
	}
	secrets := []string{real.Password, stale.Password}
	stdout, stderr, err := runIO(t, "", "accounts", "list", "-credentials-file", file, "-credentials-ref", "bmc-a", "-bmc", addr, "-insecure")
	if err != nil || !strings.Contains(stdout, "admin") {
		t.Fatalf("accounts list with the BMC on the pending credentials: %v\n%s%s", err, stdout, stderr)
	}
	assertNoSecret(t, secrets, stdout, stderr)

	for _, c := range []struct {
		password string
		args     []string
		want     string
	}{
		{"", []string{"-user", "root"}, `-user "root": -credentials-file`},
		{"Other-pass-2", nil, "$BMC_PASSWORD is set and differs"},
		{"", []string{"-credentials-ref", "nobody"}, `-credentials-file: no credentials named "nobody"`},
	} {
		args := append([]string{"accounts", "list", "-credentials-file", file, "-credentials-ref", "bmc-a", "-bmc", addr, "-insecure"}, c.args...)
		stdout, stderr, err := runIO(t, c.password, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bmcjob %s: %v; want %q", strings.Join(args, " "), err, c.want)
		}
		assertNoSecret(t, append(secrets, "Other-pass-2"), stdout, stderr, errText(err))
	}
}

// rotate refuses to run without somewhere to keep the new password, and
// names the flag of a bad value.
func TestRotateFlagErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rotate", "-simulate"}, "rotate: -credentials-file is required"},
		{[]string{"rotate", "-simulate", "-credentials-file", file, "-mode", "swap"}, `-mode: "swap" is not one of password, account`},
		{[]string{"rotate", "-simulate", "-credentials-file", file, "-new-user", "ops"}, "-new-user: userName and role are for mode account"},
		{[]string{"rotate", "now", "-simulate", "-credentials-file", file}, "rotate: takes no arguments"},
	} {
		if _, err := runOut(t, "", c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bmcjob %s: %v; want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	// -simulate: the simulated BMC's credentials go to the file first.
	stdout, stderr, err := runIO(t, "", "rotate", "-simulate", "-credentials-file", file, "-credentials-ref", "sim")
	if err != nil || !strings.Contains(stdout, `are in `+file+` as "sim"`) {
		t.Fatalf("rotate -simulate: %v\n%s%s", err, stdout, stderr)
	}
	c := fileCreds(t, file, "sim")
	assertNoSecret(t, []string{c.Password, redfishtestDefaultPassword}, stdout, stderr)
}

// redfishtestDefaultPassword is the simulator's default password
// (redfishtest.Config.Password), which -simulate logs in with.
var redfishtestDefaultPassword = func() string {
	s := redfishtest.NewServer(redfishtest.Config{})
	defer s.Close()
	return s.Credentials().Password
}()
