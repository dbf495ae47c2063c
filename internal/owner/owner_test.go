package owner

import (
	"os"
	"strings"
	"testing"
)

func TestStable(t *testing.T) {
	t.Setenv(PodNameEnv, "ctl-5c6d-abcde")
	if got := Stable(); got != "ctl-5c6d-abcde" {
		t.Fatalf("Stable() = %q with POD_NAME set, want the pod's name", got)
	}
	t.Setenv(PodNameEnv, "")
	if a, b := Stable(), Stable(); a == b {
		t.Fatalf("Stable() = %q twice without POD_NAME: two processes on one host would share it", a)
	}
}

func TestDefaultIsUnique(t *testing.T) {
	a, b := Default(), Default()
	if a == b {
		t.Fatalf("Default() returned %q twice", a)
	}
	host, _ := os.Hostname()
	if !strings.HasPrefix(a, host+"-") {
		t.Fatalf("Default() = %q, want host-pid-random", a)
	}
}
