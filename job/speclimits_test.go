package job_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// hostileSpec is a job spec of n power tasks: 1M tasks are 22 MB.
func hostileSpec(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"bmc":"redfish://10.0.0.5","tasks":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"power":{"op":"on"}}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// allocated returns the bytes fn allocated (runtime TotalAlloc): an upper
// bound on how far it raised the peak heap.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// Hostile specs are refused while they are read, with the limit named, and
// memory is bounded by the limits, not by the input: at most 10 MB
// allocated for a 22 MB spec of 1M tasks (it was 502 MB), for a spec just
// under MaxSpecBytes holding 45k tasks, and for a 20 MB credentialsRef.
func TestHostileSpecsBoundedMemory(t *testing.T) {
	const bound = 10 << 20
	huge := hostileSpec(1_000_000)
	atLimit := hostileSpec((job.MaxSpecBytes - 100) / 22)
	longRef := []byte(`{"bmc":"redfish://10.0.0.5","credentialsRef":"` + strings.Repeat("r", 20<<20) + `","tasks":[{"power":{"op":"on"}}]}`)
	refAtLimit := []byte(`{"bmc":"redfish://10.0.0.5","credentialsRef":"` + strings.Repeat("r", 4000) + `","tasks":[{"power":{"op":"on"}}]}`)
	if len(huge) < 20<<20 || len(atLimit) > job.MaxSpecBytes {
		t.Fatalf("fixture sizes %d, %d", len(huge), len(atLimit))
	}
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"22 MB, 1M tasks", huge, "at most 1 MiB"},
		{"1 MiB, 45k tasks", atLimit, "tasks: more than 100 elements (at most 100)"},
		{"20 MB credentialsRef", longRef, "at most 1 MiB"},
		{"4000-byte credentialsRef", refAtLimit, "credentialsRef: 4000 bytes, at most 253"},
	} {
		var err error
		n := allocated(func() { _, err = job.DecodeSpec(c.in) })
		if !errors.Is(err, job.ErrInvalidSpec) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: DecodeSpec = %v, want ErrInvalidSpec naming %q", c.name, err, c.want)
		}
		n2 := allocated(func() { _, err = job.ReadSpec(bytes.NewReader(c.in)) })
		if !errors.Is(err, job.ErrInvalidSpec) {
			t.Errorf("%s: ReadSpec = %v, want ErrInvalidSpec", c.name, err)
		}
		t.Logf("%s (%d bytes): DecodeSpec allocated %d KiB, ReadSpec %d KiB: %v", c.name, len(c.in), n>>10, n2>>10, err)
		if n > bound || n2 > bound {
			t.Errorf("%s: allocated %d / %d bytes, want at most %d", c.name, n, n2, bound)
		}
	}
	// task.Decode: one task spec, at most task.MaxSpecBytes.
	var err error
	n := allocated(func() { _, err = task.Decode(huge) })
	if err == nil || !strings.Contains(err.Error(), "at most 64 KiB") || n > bound {
		t.Errorf("task.Decode of 22 MB: %v, allocated %d", err, n)
	}
	// A valid spec still decodes.
	if _, err := job.DecodeSpec(hostileSpec(100)); err != nil {
		t.Fatalf("100 tasks: %v", err)
	}
}

// BenchmarkDecodeHostileSpec reports what refusing the 22 MB, 1M-task spec
// costs (B/op is the allocation; it was 502 MB before the limits).
func BenchmarkDecodeHostileSpec(b *testing.B) {
	for _, c := range []struct {
		name string
		in   []byte
	}{{"22MB-1Mtasks", hostileSpec(1_000_000)}, {"1MiB-45ktasks", hostileSpec((job.MaxSpecBytes - 100) / 22)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := job.DecodeSpec(c.in); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
