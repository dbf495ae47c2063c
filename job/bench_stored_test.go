package job

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// BenchmarkStepStored is BenchmarkStep plus the store work a job needs
// whoever runs it: its record created (as Submit does) and every write the
// Stepper asks for encoded (hand-written codec, spec cached, timestamp text
// cached per worker, as the Runner's step workers do) and stored in memstore
// by compare-and-swap. BenchmarkRunner's CPU per task over this one's is
// what the Runner adds by scheduling: the change feed, the queues, locks,
// the event loop, Wait.
func BenchmarkStepStored(b *testing.B) {
	s, err := NewStepper(StepperConfig{Dialer: fake.New(fake.Options{Power: bmc.PowerOn})})
	if err != nil {
		b.Fatal(err)
	}
	store := memstore.New()
	ctx := context.Background()
	var times timeCache
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := storedCPUTime()
	for i := 0; i < b.N; i++ {
		key := fmt.Sprintf("bmckit/jobs/s%d", i)
		j := &Job{Name: key[len("bmckit/jobs/"):], Generation: 1, CreatedAt: time.Now(), Spec: Spec{
			BMC: "redfish://10.9.0.1/redfish/v1/Systems/1",
			Tasks: []task.Spec{
				{Power: &task.PowerAction{Op: task.PowerOff}},
				{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
				{Power: &task.PowerAction{Op: task.PowerOn}},
			},
		}}
		data, err := marshalRecord(j)
		if err != nil {
			b.Fatal(err)
		}
		rev, err := store.Create(ctx, key, data)
		if err != nil {
			b.Fatal(err)
		}
		spec := specCache{times: &times}
		persist := func(ctx context.Context, j *Job) error {
			return encodeJobPooled(j, &spec, func(data []byte) error {
				n, err := store.Update(ctx, key, data, rev)
				rev = n
				return err
			})
		}
		for {
			res, err := s.Step(ctx, j, persist)
			if err != nil {
				b.Fatal(err)
			}
			if res.Done {
				break
			}
		}
		if j.Status.Result != "Succeeded" {
			b.Fatal(j.Status.Message)
		}
	}
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric(float64((storedCPUTime()-cpu0).Microseconds())/float64(3*b.N), "cpu-µs/task")
}

// storedCPUTime is the process's user + system CPU time so far.
func storedCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
