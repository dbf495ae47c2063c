package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is an io.Writer the command writes to while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The monitor command against a simulated fleet of 12: ten machines answer,
// the endpoint with other credentials shows Unauthorized, and once the
// endpoint that goes away is gone its machines show Unreachable. Ctrl-C
// (the ctx ending) exits cleanly.
func TestMonitorSimulatedFleet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, &env{stdout: out, stderr: out}, []string{"monitor", "-simulate", "12", "-interval", "200ms", "-every", "50ms"})
	}()
	// The last table printed once the endpoint went away (after four
	// intervals): 10 unreachable, 2 unauthorized.
	final := regexp.MustCompile(`12 machines: 0 contactable, 2 Unauthorized, 10 Unreachable\n`)
	deadline := time.Now().Add(30 * time.Second)
	for !final.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no table with every machine down:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("monitor after Ctrl-C: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("monitor did not exit after Ctrl-C")
	}
	s := out.String()
	for _, want := range []string{"simulated fleet: 12 machines on 2 Redfish endpoints", "CONTACTABLE", "12 machines: 0 contactable, 12 not read yet",
		"Contacted", "Unauthorized", "Unreachable", "refused the credentials", "is unreachable"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if !regexp.MustCompile(`Systems/\d+ +True +Contacted +(On|Off) `).MatchString(s) {
		t.Errorf("no row with a machine contactable and on:\n%s", s)
	}
}

func TestMonitorNeedsMachines(t *testing.T) {
	if _, err := runOut(t, "", "monitor"); err == nil || !strings.Contains(err.Error(), "give BMC URLs or -simulate N") {
		t.Errorf("monitor without machines: %v", err)
	}
	if _, err := runOut(t, "", "monitor", "ftp://10.0.0.1"); err == nil || err.Error() != `monitor: BMC address 1: invalid BMC address: unsupported scheme "ftp"; supported: redfish, redfish+https, redfish+http, ipmi` {
		t.Errorf("monitor ftp://: %v", err)
	}
}
