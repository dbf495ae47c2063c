package ipmitest

import (
	"os"
	"os/exec"
	"testing"
)

// RequireProgram returns the path of the external program name (ipmitool,
// OpenIPMI's ipmi_sim) that a test runs against, with bmckit's policy for a
// missing one: the test skips with a message naming the Debian package pkg
// to install, unless the environment variable CI is "true" (CI installs
// every program the tests need, see scripts/test.sh), where it fails.
func RequireProgram(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found under CI=true (%v): scripts/test.sh should have installed Debian package %s", name, err, pkg)
	}
	t.Skipf("%s not found (%v): install Debian package %s (apt-get install %s) to run this test", name, err, pkg, pkg)
	return ""
}
