// Package sched is the scheduling engine of package job's Runner: the
// worker-pool side that decides which job runs on which system, when, and
// under which lease.
//
// One goroutine (the event loop, [Engine.Run]) owns the per-system queues,
// fed by the store's change feed; it claims free systems by writing their
// locks (package syslock) by compare-and-swap, runs each held job's due
// steps on a bounded pool of reused worker goroutines, renews the leases,
// fences every BMC request by its system's lease (syslock.Fence), hands a
// system over to its next queued job, shares the claimable systems with the
// other replicas (job/internal/membership), and releases the locks when it
// stops. docs/jobs.md has the whole model.
//
// The engine knows no job type. What it needs of jobs (decoding a stored
// record's head, running one step, completing a job that needs no BMC,
// closing a job's BMC connection) it asks of [Jobs], which package job
// implements; the job a step leaves behind it keeps as an opaque [Copy] and
// hands to the job's next step.
package sched
