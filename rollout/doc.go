// Package rollout runs one job template across a fleet: never more than
// Policy.MaxUnavailable servers (and per-group limits) unavailable at once,
// a canary first, halted by a failure budget, held back per server by an
// approval gate, skipping servers already in the wanted state, and
// resumable after any crash (docs/rollouts.md has the design, the crash
// points and the alternatives rejected).
//
// A Controller keeps each rollout in the job.Runner's Store beside its jobs
// and makes passes: read the rollout, record the jobs that completed,
// decide which servers start, write by compare-and-swap, and only then
// create their jobs (job.Runner.Submit, under a name fixed by the server's
// index, so a job is never created twice). Run one Controller per replica,
// beside its Runner:
//
//	ctl, err := rollout.New(rollout.Config{Runner: runner, Store: store})
//	go ctl.Start(ctx)
//	_, err = ctl.Create(ctx, "bios-2026-12", rollout.Spec{
//		Template: job.Spec{CredentialsRef: "lab", Tasks: tasks},
//		Servers:  servers,
//		Policy:   rollout.Policy{MaxUnavailable: rollout.Count(50), Canary: 10, FailureBudget: rollout.Percent(2)},
//	})
//	r, err := ctl.Wait(ctx, "bios-2026-12")
//
// Hosts that keep a rollout in their own object (a Kubernetes resource's
// status) call Decide, the same decisions the Controller makes, and store
// its result with their own optimistic concurrency.
//
// The status follows the library's condition model: Completed is True once
// the rollout ended, whatever its Result (Succeeded, Failed, Halted,
// Aborted); Running and Paused report progress.
package rollout
