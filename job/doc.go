// Package job runs jobs — ordered lists of tasks against one BMC — and
// reports their progress through conditions.
//
// # Two ways to run, one state machine
//
// [Stepper.Step] advances one job until it must wait (for a power change to
// land, a boot, a retry, or its system). It calls a [PersistFunc] with the
// intent before every BMC action and again with each result (a task's result
// and the next task's intent go out in one write), and returns when to be
// called again. A Kubernetes controller keeps the [Job] in its own object
// (Spec and Status are plain JSON structs) and calls [Stepper.StepPatch] from
// Reconcile, which hands its persist the status before and after each change
// to build the status patch from, and returns RequeueAfter (a positive one
// for "at once": zero means "do not requeue" in controller-runtime). A
// finished example is examples/controller; docs/kubernetes.md explains it.
//
// [Runner] is the standalone worker pool: it keeps jobs in a storage.Store,
// runs up to Config.Workers at once with the same Stepper (persist is a
// compare-and-swap on the job's record), and never runs two jobs on one
// system at once. [Runner.Start] blocks until its context ends, so it fits
// controller-runtime's manager.Runnable.
//
// # Conditions and results
//
// A job's Status has two conditions: Completed (True once terminal, whatever
// the outcome) and Running (progress; never True on a completed job). The
// outcome is Status.Result (Succeeded, Failed, Canceled) with Reason and
// Message; a failed job's message names the failing task and the BMC error,
// e.g. "task 3 (power on) failed: bmc power on redfish://...: ...". Each task
// has the same shape in Status.Tasks.
//
// # Execution contract
//
//   - Intent before action: a task's phase Started is persisted before the
//     action is sent, Requested after the BMC accepted it, Done at the end.
//   - Verified effects: power is polled until the target state is seen (every
//     PollInterval, 250ms by default, slower after SlowPollAfter; once the
//     Stepper learned how long a system's changes of an action take, at most
//     2.5s apart before that time and every 500ms around and after it, see
//     [AdaptivePoll]; where
//     the driver implements bmc.PowerWatcher and the host can be woken
//     (StepperConfig.Wake, always in the Runner), the BMC's event ends the
//     wait with one confirming read, see [PowerEvents]); a power
//     request the BMC silently dropped is re-sent after ResendAfter; the boot
//     override is read back where the BMC can report it (an override the BMC
//     ignored or reverted is set again, then fails with VerificationFailed);
//     virtual media is read back as inserted with the requested image.
//   - Crash safety: a resumed task in phase Started is first re-checked
//     (read the BMC) and re-sent only if its effect is missing; finished tasks
//     are never re-run. Cycle and reset end where they started (On), so the
//     state cannot tell whether they happened: after a crash or a failed
//     request they are sent again, and they count as done once the BMC
//     accepted them and reports On (follow them with a wait-for-boot task to
//     verify the reboot itself).
//   - Deadlines: BMC calls of a step are bounded by what is left of the
//     task's and the job's timeouts, so a hung call cannot hold a BMC.
//   - Errors: transient BMC errors (bmc.IsTransient) are retried with
//     exponential backoff and jitter within the task's timeout; permanent ones
//     (bad credentials, unsupported action, validation) fail the task at once
//     with reason Unauthorized, NotSupported or BMCError. An error wrapping
//     bmc.ErrSessionExpired also closes the pooled connection, so the retry
//     logs in again.
//   - Sessions: connections live in a [connpool.Pool] keyed by system and a hash
//     of the credentials, so a controller that reconciles twenty times still
//     uses one BMC session; systems behind one endpoint share one session
//     where the driver implements bmc.SystemOpener (Redfish). A job's
//     connection is closed when it completes, after IdleTimeout, or when the
//     credentials change; the shared session when no system uses it.
//   - Credentials never persist: jobs carry a CredentialsRef that the host's
//     [bmc.CredentialsResolver] resolves at run time.
//
// # Scheduling
//
// A job targets a system, bmc.Endpoint.SystemKey (host:port plus the Redfish
// system path). At most one job acts on a system at any moment, across
// goroutines, runners, replicas and the Stepper path, through one lock record
// per system in the Store, written by compare-and-swap. The record names the
// job that holds the system until that job completed (so a started job is
// always resumed before another starts, whoever resumes it) and the runner
// whose lease lets it act now. Per system, jobs run in submission order: the
// store revision of their creation, independent of any clock. Systems behind
// one endpoint run in parallel, up to Config.EndpointConcurrency.
//
// Leases: a runner renews its locks every LeaseDuration/3 (those written
// at least LeaseDuration/12 before). Another runner
// takes a lock over only after seeing it unchanged for a whole LeaseDuration
// by its own clock, so clock skew between replicas cannot cut a lease short;
// a runner restarted with the same Config.Owner takes its locks back at once.
// A runner stops sending BMC requests a sixth of a lease before its own lease
// may have expired, and a store outage pauses its workers instead of ending
// them: once a renewal succeeds again (nobody took the lock meanwhile) the
// work goes on.//
// Replicas share the fleet: each Runner keeps a heartbeat record,
// <KeyPrefix>runners/<Owner>, written with its lock renewals, and counts the
// live replicas by judging those records as it judges locks. It claims at
// most ceil(claimable/live) systems plus a slack (a tenth, at least one), and
// one that holds more gives systems back when their jobs complete, so the
// death of one replica stalls only its share of the fleet for a lease.
//
// On the controller path, StepperConfig.Locks ([syslock.Locker];
// [syslock.NewStoreLocker] over any Store) gives Step the same guarantee: Step locks
// the system before it touches the BMC, unlocks it once the job completed,
// and returns a StepResult with Waiting set (touching nothing) while another
// job holds it. Call [Stepper.Release] when a job's object is deleted.
//
// docs/jobs.md has the whole model and the alternatives rejected.
//
// # Task kinds
//
// Each task kind (task.Spec's one-of action) is one type that owns its
// action, read-back and timeout: power (verified by polling the power
// state), powerStatus and reachable (read-only: the job's session and one
// read, recorded in task.Status.PowerState), bootDevice (read back where
// the BMC can; device http is UEFI HTTP boot from a URI, NotSupported where
// the BMC lacks it), virtualMedia, bmcReset (resets the BMC itself, then
// waits until it answers through a new session; like power cycle it is sent
// again when resumed after a crash) and waitForBoot. docs/jobs.md, "Task
// kinds", has each kind's rules. Programs add kinds of their own through
// [Kind] ([StepperConfig].Kinds): the contract the built-in kinds run
// through too, where a kind sends and checks and the Stepper alone stores
// the job, fences, retries and maps errors (docs/custom-kinds.md).
//
// # Wait for boot
//
// A wait-for-boot task completes when the host's [BootTracker] (package
// bootstate) reports its boot attempt done. Each wait-for-boot task has its
// own attempt ([BootAttemptID]): the first is opened when the job starts, each
// later one when the previous wait completed — always before the tasks that
// power the server on — so a fast callback is not lost and a callback from an
// earlier boot cannot complete a later wait. The task's Timeout is the boot's
// deadline counted from when its attempt was opened (the boot starts with the
// power tasks before the wait).
package job
