package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

// The "settle" mode measures what StepperConfig.PowerSettle gives and costs
// (docs/jobs.md, "Power tasks"), through job.Runner with default options
// otherwise and the Redfish driver, on the real clock:
//
//   - pending: a redfishtest BMC that hides pending changes
//     (InvisiblePending: it keeps reporting Off, no transitional state);
//     another client requests On, which lands -pending later (10.6 s as in
//     issue 25); our job [power off] starts right after. Reported: the
//     job's result and wall time, what it sent, and the server's state once
//     the other On has landed.
//   - lone: the same job on a server that is Off with nothing pending (a
//     retried or resumed job, the common case of a target already there):
//     what the window costs in wall time and reads.

func runSettle(settles []time.Duration, pending time.Duration) error {
	fmt.Printf("Job [power off] through job.Runner (defaults: PollInterval 250ms) and the Redfish driver, on a\n")
	fmt.Printf("redfishtest BMC that reports the old state while a change is pending (InvisiblePending).\n\n")
	fmt.Println("| case | PowerSettle | result | job wall | GETs of the system | resets sent | server once the other On landed |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, c := range []struct {
		name    string
		pending bool
	}{{fmt.Sprintf("another client's On pending, lands %s after its request", pending), true}, {"server Off, nothing pending (target already there)", false}} {
		for _, s := range settles {
			r, err := settleOnce(s, c.pending, pending)
			if err != nil {
				return err
			}
			fmt.Printf("| %s | %s | %s | %s | %d | %d | %s |\n", c.name, s, r.result, r.wall.Round(time.Millisecond), r.gets, r.resets, r.final)
		}
	}
	fmt.Println()
	fmt.Println("job wall: Submit to Wait returning. GETs of the system: from the job's dial to its logout. The")
	fmt.Println("server's state is read after the other client's On was due (plus 0.5 s).")
	return nil
}

type settleResult struct {
	result string
	wall   time.Duration
	gets   int
	resets int
	final  string
}

func settleOnce(settle time.Duration, pending bool, delay time.Duration) (*settleResult, error) {
	srv := redfishtest.NewServer(redfishtest.Config{PowerDelay: delay, InvisiblePending: true})
	defer srv.Close()
	srv.SetPower("1", "Off")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var onAt time.Time
	if pending {
		// Another client: its own session, its On accepted, then gone.
		drv, err := redfish.NewDialer(redfish.Options{}).DialDriver(ctx, srv.Endpoint("1"), srv.Credentials())
		if err != nil {
			return nil, err
		}
		if err := drv.SetPower(ctx, bmc.PowerActionOn); err != nil {
			return nil, err
		}
		onAt = time.Now()
		_ = drv.Close(ctx)
	}
	before := len(srv.Requests())
	var sd bmc.SchemeDialer
	sd.Register("redfish", redfish.NewDialer(redfish.Options{}))
	r, err := job.NewRunner(job.Config{Store: memstore.New(), ScanInterval: 50 * time.Millisecond,
		StepperConfig: job.StepperConfig{Dialer: &sd, Credentials: bmc.StaticCredentials{"lab": srv.Credentials()}, PowerSettle: settle}})
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()
	t0 := time.Now()
	if _, err := r.Submit(ctx, "off", job.Spec{BMC: srv.Address("1"), CredentialsRef: "lab", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}}}); err != nil {
		return nil, err
	}
	j, err := r.Wait(ctx, "off")
	if err != nil {
		return nil, err
	}
	out := &settleResult{result: string(j.Status.Result), wall: time.Since(t0)}
	if pending {
		if wait := time.Until(onAt.Add(delay + 500*time.Millisecond)); wait > 0 {
			time.Sleep(wait)
		}
	}
	for _, q := range srv.Requests()[before:] {
		switch {
		case q.Method == "GET" && q.Path == "/redfish/v1/Systems/1":
			out.gets++
		case q.Method == "POST" && q.Path == "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset":
			out.resets++
		}
	}
	out.final = srv.System("1").Power
	return out, nil
}
