// Package oneshot runs one job to completion in this process and returns
// it: the shortest path from a job.Spec to a result, for scripts, tests and
// tools.
//
//	j, err := oneshot.Run(ctx, job.Spec{
//		BMC:   addr, // e.g. "redfish://10.0.0.5/redfish/v1/Systems/1"
//		Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}},
//	}, oneshot.Options{Credentials: bmc.Credentials{Username: user, Password: password}})
//
// [Run] starts a [job.Runner] on a temporary memory store with bmckit's
// drivers registered by scheme ([NewDialer]: redfish://, redfish+https://,
// redfish+http:// and ipmi://), submits the spec, waits for the job to
// complete, stops the runner (its BMC session is logged out) and returns the
// completed job. The job runs exactly as it would in a long-lived Runner:
// every effect verified by reading the BMC back, transient errors retried
// within each task's timeout, progress through [job.Config].OnUpdate.
//
// # When to use the Runner instead
//
// Nothing outlives the call: the memory store goes with it, so a process
// that dies mid-job leaves no record to resume from, and two processes
// running Run on one server do not know of each other. A program that runs
// jobs as a service (a controller, a fleet tool, anything with replicas or
// restarts) keeps them in a durable store with [job.NewRunner] and
// storage/boltstore or storage/sqlstore, as the repository's README shows
// next.
//
// # Why a module of its own
//
// The core module (github.com/bmckit/bmckit) cannot import the drivers: they
// are modules that require it, and the core's users must not get gofish or
// go-ipmi in their module graph. This package lives in its own module, which
// requires the core and both drivers, so only a program that imports it gets
// them. docs/quickstart-api.md records the decision and the alternatives
// rejected.
package oneshot
