package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// accounts list and rotate against OpenIPMI's ipmi_sim (a BMC written
// independently of bmckit): the accounts are those "ipmitool user list"
// shows, rotate changes the password within IPMI's 20 bytes (ipmitool logs
// in with the new one from the file, not with the old), and no password is
// printed.
func TestAccountsAndRotateOnIPMISim(t *testing.T) {
	ipmitool := ipmitest.RequireProgram(t, "ipmitool", "ipmitool")
	sim := ipmitest.StartOpenIPMI(t, ipmitest.OpenIPMIOptions{})
	addr := sim.Endpoint.String() + "?cipher=3"
	c := sim.Credentials
	stdout, stderr, err := runIO(t, c.Password, "accounts", "list", "-bmc", addr, "-user", c.Username)
	if err != nil || !strings.Contains(stdout, c.Username) || !strings.Contains(stdout, "Administrator") {
		t.Fatalf("accounts list on ipmi_sim: %v\n%s%s", err, stdout, stderr)
	}
	assertNoSecret(t, []string{c.Password}, stdout, stderr)

	file := filepath.Join(t.TempDir(), "creds.json")
	stdout, stderr, err = runIO(t, c.Password, "rotate", "-credentials-file", file, "-bmc", addr, "-user", c.Username)
	if err != nil {
		t.Fatalf("rotate on ipmi_sim: %v\n%s%s", err, stdout, stderr)
	}
	nc := fileCreds(t, file, addr)
	if len(nc.Password) > 20 || nc.Password == c.Password {
		t.Fatalf("rotated password: %d bytes, changed %t; want at most 20 and changed", len(nc.Password), nc.Password != c.Password)
	}
	assertNoSecret(t, []string{c.Password, nc.Password}, stdout, stderr)
	login := func(password string) error {
		host, port, _ := strings.Cut(sim.Endpoint.HostPort(), ":")
		cmd := exec.Command(ipmitool, "-I", "lanplus", "-C", "3", "-H", host, "-p", port, "-U", c.Username, "-E", "-R", "1", "-N", "1", "mc", "info")
		cmd.Env = []string{"IPMI_PASSWORD=" + password}
		return cmd.Run()
	}
	if err := login(nc.Password); err != nil {
		t.Errorf("ipmitool refuses the rotated password: %v", err)
	}
	if err := login(c.Password); err == nil {
		t.Error("ipmitool still logs in with the old password")
	}
}
