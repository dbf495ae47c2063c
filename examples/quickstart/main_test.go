package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is written by the runner's workers (progress) and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestQuickstart(t *testing.T) {
	for _, target := range []string{"redfish", "fake"} {
		t.Run(target, func(t *testing.T) {
			var out syncBuffer
			err := run([]string{"-servers", "3", "-target", target, "-power-delay", "50ms", "-latency", "1ms"}, &out)
			if err != nil {
				t.Fatalf("quickstart failed: %v\n%s", err, out.String())
			}
			s := out.String()
			if !strings.Contains(s, "3 of 3 jobs succeeded") {
				t.Fatalf("missing summary:\n%s", s)
			}
			if n := strings.Count(s, "Completed = True   reason=Succeeded"); n != 3 {
				t.Fatalf("want 3 jobs Completed=True/Succeeded, got %d:\n%s", n, s)
			}
			if strings.Contains(s, "Running   = True") {
				t.Fatalf("stale Running=True:\n%s", s)
			}
		})
	}
}

func TestQuickstartRejectsBadFlags(t *testing.T) {
	var out syncBuffer
	if err := run([]string{"-servers", "0"}, &out); err == nil || !strings.Contains(err.Error(), "-servers 0") {
		t.Fatalf("want an error naming -servers, got %v", err)
	}
	if err := run([]string{"-target", "vmware"}, &out); err == nil || !strings.Contains(err.Error(), `-target "vmware"`) {
		t.Fatalf("want an error naming -target, got %v", err)
	}
}

// -h prints the usage and is not an error (exit status 0).
func TestHelpIsNotAnError(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-h"}, &out); err != nil {
		t.Fatalf("-h: %v", err)
	}
	if !strings.Contains(out.String(), "usage: go run ./examples/quickstart") || !strings.Contains(out.String(), "-servers") {
		t.Errorf("-h output lacks the usage:\n%s", out.String())
	}
}
