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
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// BenchSteps runs one 3-task netboot job (power off, PXE once in UEFI mode,
// power on) to completion per iteration on a Stepper built from cfg (Dialer
// set to a fake BMC answering at once) and reports tasks/s and CPU per task.
//
// Without stored, the Stepper's writes go nowhere: the state machine's own
// cost (BenchmarkStep). With stored, each job's record is created (as
// Submit does) and every write the Stepper asks for is encoded as the
// Runner encodes it (encodePooled) and stored in memstore by compare-and-swap: the Stepper plus the store
// work every job needs whoever runs it (BenchmarkStepStored). The Runner's
// CPU per task over the stored figure is what it adds by scheduling (change
// feed, queues, locks, event loop, Wait).
//
// Exported for the job_test benchmarks; it exists in test builds only.
func BenchSteps(b *testing.B, cfg StepperConfig, stored bool) {
	// No call log, as in the job_test benchmarks' fleet (benchBMC there).
	cfg.Dialer = fake.New(fake.Options{Power: bmc.PowerOn, CallLogSize: -1})
	if cfg.Locks == nil {
		cfg.Locks = syslock.NoLocking // as the Runner's own Stepper
	}
	s, err := NewStepper(cfg)
	if err != nil {
		b.Fatal(err)
	}
	store := memstore.New()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := CPUTime()
	for i := 0; i < b.N; i++ {
		j := &Job{Name: "s", Generation: 1, Spec: Spec{
			BMC: "redfish://10.9.0.1/redfish/v1/Systems/1",
			Tasks: []task.Spec{
				{Power: &task.PowerAction{Op: task.PowerOff}},
				{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
				{Power: &task.PowerAction{Op: task.PowerOn}},
			},
		}}
		persist := func(context.Context, *Job) error { return nil }
		if stored {
			j.Name, j.CreatedAt = fmt.Sprintf("s%d", i), time.Now()
			key := "bmckit/jobs/" + j.Name
			data, err := marshalRecord(j)
			if err != nil {
				b.Fatal(err)
			}
			rev, err := store.Create(ctx, key, data)
			if err != nil {
				b.Fatal(err)
			}
			persist = func(ctx context.Context, j *Job) error {
				return encodePooled(j, func(data []byte) error {
					n, err := store.Update(ctx, key, data, rev)
					rev = n
					return err
				})
			}
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
	b.ReportMetric(float64((CPUTime()-cpu0).Microseconds())/float64(3*b.N), "cpu-µs/task")
}

// CPUTime is the CPU time (user + system) the process used so far, from its
// own accounting: the stable figure on a shared machine, where wall-clock
// rates move with other load. Test builds only.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
