package testbin

import (
	"os"
	"os/exec"
	"testing"
)

// Require returns the path of program name, or skips the test (fails it
// under CI=true) when it is not on PATH. pkg names the Debian package that
// provides it, for the message.
func Require(t testing.TB, name, pkg string) string {
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
