package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/boltstore"
	"github.com/bmckit/bmckit/task"
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

// Running again with the same -db replaces the earlier run's jobs, finished
// or left unfinished by an interrupted run, and succeeds each time; the
// store then holds one run's jobs.
func TestQuickstartRerunWithTheSameDB(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bmckit.db")
	args := []string{"-servers", "3", "-target", "fake", "-power-delay", "10ms", "-latency", "0s", "-db", db}
	for i := 1; i <= 2; i++ {
		var out syncBuffer
		if err := run(args, &out); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out.String())
		}
		replaced := strings.Contains(out.String(), "replaced 3 jobs of an earlier run")
		if replaced != (i > 1) || !strings.Contains(out.String(), "3 of 3 jobs succeeded") {
			t.Fatalf("run %d (replaced: %v):\n%s", i, replaced, out.String())
		}
	}
	// An interrupted earlier run: a job submitted and never run, against
	// a BMC that is gone.
	store, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fake.NewFleet(), Credentials: bmc.StaticCredentials{}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := job.Spec{BMC: "redfish://192.0.2.1/redfish/v1/Systems/1", CredentialsRef: "fleet", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}}}
	if err := r.Delete(ctx, "netboot-02"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(ctx, "netboot-02", spec); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	if err := run(args, &out); err != nil || !strings.Contains(out.String(), "replaced 3 jobs of an earlier run") {
		t.Fatalf("run after an interrupted one: %v\n%s", err, out.String())
	}
	store, err = boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err = job.NewRunner(job.Config{Store: store, StepperConfig: job.StepperConfig{Dialer: fake.NewFleet(), Credentials: bmc.StaticCredentials{}}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 {
		t.Fatalf("the store holds %d jobs after three runs, want 3", len(jobs))
	}
	for _, j := range jobs {
		if j.Status.Result != "Succeeded" || strings.Contains(j.Spec.BMC, "192.0.2.1") {
			t.Errorf("job %s on %s: %s", j.Name, j.Spec.BMC, j.Status.Result)
		}
	}
}
