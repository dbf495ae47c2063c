package job_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

// Run a netboot job with the worker-pool Runner on a fake BMC and an
// in-memory store.
func ExampleRunner() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fleet := fake.NewFleet()
	_, _ = fleet.AddNew("redfish://10.0.0.5/redfish/v1/Systems/1", fake.Options{Username: "admin", Password: "pw", Power: bmc.PowerOn})

	runner, err := job.NewRunner(job.Config{
		Store: memstore.New(),
		StepperConfig: job.StepperConfig{
			Dialer:      fleet,
			Credentials: bmc.StaticCredentials{"bmc-5": {Username: "admin", Password: "pw"}},
		},
	})
	if err != nil {
		panic(err)
	}
	go func() { _ = runner.Start(ctx) }()

	_, err = runner.Submit(ctx, "netboot-5", job.Spec{
		BMC:            "redfish://10.0.0.5/redfish/v1/Systems/1",
		CredentialsRef: "bmc-5",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		},
	})
	if err != nil {
		panic(err)
	}
	j, err := runner.Wait(ctx, "netboot-5")
	if err != nil {
		panic(err)
	}
	for _, c := range j.Status.Conditions {
		fmt.Printf("%s=%s (%s)\n", c.Type, c.Status, c.Reason)
	}
	fmt.Println("result:", j.Status.Result, "-", j.Status.Message)
	// Output:
	// Completed=True (Succeeded)
	// Running=False (Succeeded)
	// result: Succeeded - all 3 tasks succeeded
}

// Advance a job one step at a time, as a controller's reconcile loop does
// with the job kept in its own object (here a variable). Locks keeps two
// objects aimed at one system from interleaving: while "reprovision" holds
// the system, a step of "reboot" touches nothing and says it is waiting.
func ExampleStepper() {
	ctx := context.Background()
	// Power changes land 20 ms after the request, as on a (very fast) BMC.
	b := fake.New(fake.Options{Power: bmc.PowerOn, PowerTransition: 20 * time.Millisecond})
	stepper, err := job.NewStepper(job.StepperConfig{
		Dialer: b,
		// Any storage.Store; a controller may use a Kubernetes Lease-backed
		// syslock.Locker instead.
		Locks:             syslock.NewStoreLocker(memstore.New(), syslock.StoreLockerConfig{}),
		LockRetryInterval: 20 * time.Millisecond, // defaults to 2s
	})
	if err != nil {
		panic(err)
	}
	defer stepper.Close(ctx)

	newObj := func(name string, op task.PowerOp) *job.Job {
		return &job.Job{Name: name, Generation: 1, Spec: job.Spec{
			BMC:   "ipmi://10.0.0.6",
			Tasks: []task.Spec{{Power: &task.PowerAction{Op: op}}},
		}}
	}
	objs := []*job.Job{newObj("reprovision", task.PowerCycle), newObj("reboot", task.PowerReset)}
	// reconcile is a controller's Reconcile for object i. persist is where
	// it patches the object's status: Step hands it the job to store.
	reconcile := func(i int) job.StepResult {
		persist := func(ctx context.Context, j *job.Job) error { objs[i] = j; return nil }
		res, err := stepper.Step(ctx, objs[i], persist)
		if err != nil {
			panic(err) // a controller returns the error and is retried
		}
		if res.Waiting {
			fmt.Printf("%s: waiting, requeue after %s\n", objs[i].Name, res.RequeueAfter)
		}
		// A controller returns ctrl.Result{RequeueAfter: res.RequeueAfter},
		// with a small positive delay when RequeueAfter is 0 and the job is
		// not Done (zero means "do not requeue" in controller-runtime, and
		// the deprecated Requeue flag backs off); here the requeue is a
		// sleep.
		time.Sleep(res.RequeueAfter)
		return res
	}
	reconcile(0) // "reprovision" locks the system and cycles the power
	reconcile(1) // "reboot" finds the system held
	for !reconcile(0).Done {
	}
	for !reconcile(1).Done {
	}
	for _, o := range objs {
		fmt.Println(o.Name, o.Status.Result, o.Status.Tasks[0].Message)
	}
	fmt.Println("sessions:", b.Sessions().Logins)
	// Output:
	// reboot: waiting, requeue after 20ms
	// reprovision Succeeded On
	// reboot Succeeded On
	// sessions: 2
}

// Two controller replicas without leader election both reconcile the same
// job. The lock names the job and the replica acting for it
// (StoreLockerConfig.Owner), so only one of them acts on the BMC; the other
// is told to wait, and would continue the job only once the first one's
// lock was seen unchanged for a whole lease (by then the first one's fence
// has lapsed, and its requests are refused before they are written).
func ExampleStoreLockerConfig_owner() {
	ctx := context.Background()
	b := fake.New(fake.Options{Power: bmc.PowerOff, PowerTransition: time.Hour}) // the power-on lands late
	locks := memstore.New()                                                      // shared by the replicas
	replica := func(owner string) *job.Stepper {
		s, err := job.NewStepper(job.StepperConfig{Dialer: b,
			Locks: syslock.NewStoreLocker(locks, syslock.StoreLockerConfig{Owner: owner})})
		if err != nil {
			panic(err)
		}
		return s
	}
	a, c := replica("pod-a"), replica("pod-c")
	defer a.Close(ctx)
	defer c.Close(ctx)

	obj := &job.Job{Name: "power-on", Generation: 1, Spec: job.Spec{BMC: "ipmi://10.0.0.7",
		Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}}}
	persist := func(_ context.Context, j *job.Job) error { obj = j; return nil }
	for _, s := range []*job.Stepper{a, c} { // both reconcile the object
		res, err := s.Step(ctx, obj, persist)
		if err != nil {
			panic(err)
		}
		fmt.Printf("waiting=%v phase=%s\n", res.Waiting, obj.Status.Tasks[0].Phase)
	}
	fmt.Println("power-on requests sent:", len(b.CallsTo(fake.MethodSetPower)))
	_, err := job.NewStepper(job.StepperConfig{Dialer: b}) // no Locks: refused
	fmt.Println(err != nil)
	// Output:
	// waiting=false phase=Requested
	// waiting=true phase=Requested
	// power-on requests sent: 1
	// true
}
