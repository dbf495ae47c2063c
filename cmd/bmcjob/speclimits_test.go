package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// "bmcjob run -spec" with a 22 MB spec of 1M tasks is refused with the limit
// named, having allocated at most 10 MB (it reached 348 MB before): the file
// is read only up to the limit.
func TestRunRefusesHugeSpecWithBoundedMemory(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"bmc":"redfish://10.0.0.5","tasks":[`)
	for i := range 1_000_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"power":{"op":"on"}}`)
	}
	b.WriteString(`]}`)
	p := filepath.Join(t.TempDir(), "huge.json")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b = bytes.Buffer{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var out bytes.Buffer
	err := run(context.Background(), &env{stdout: &out, stderr: &out}, []string{"run", "-simulate", "-spec", p})
	runtime.ReadMemStats(&after)
	n := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB: %v", n>>10, err)
	if err == nil || !strings.Contains(err.Error(), "larger than the limit of 1024 KiB") {
		t.Fatalf("run: %v, want the limit named", err)
	}
	if n > 10<<20 {
		t.Fatalf("allocated %d bytes, want at most 10 MiB", n)
	}
}
