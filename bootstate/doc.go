// Package bootstate records, durably, the signals a provisioned server gives
// while it boots, and decides from them when the boot completed or timed
// out.
//
// # Boot records
//
// A [Tracker] keeps one [Record] per system (keyed by the lower-case system
// UUID) in a [storage.Store]. The record belongs to one boot attempt: the
// host (or a job's wait-for-boot task, through [Tracker.StartBoot]) opens
// the attempt before powering the server on, and starting a new attempt
// retires the old one, so a late callback from an earlier boot cannot
// complete the new one. Signals are conditions on the record
// ([SignalIPXEScriptFetched], [SignalIgnitionDataFetched],
// [SignalBootStateReceived], or the host's own). Completion follows the
// condition model of package conditions: Completed=True once the attempt
// ended, and Record.Result says how (Succeeded, TimedOut, or Canceled when
// superseded).
//
// # Policy and deadlines
//
// A [Policy] (AllOf or AnyOf a list of signals), set per attempt with a
// tracker-wide default, says which signals mean "booted". Every attempt has
// a deadline stored in its record; [Tracker.Run] fires deadlines through the
// injected [Clock] and calls Config.OnTimeout so the host can retry, and
// [Tracker.BootResult] and [Tracker.Wait] apply a passed deadline
// themselves. [Tracker.Wait] blocks without busy polling: writes made by the
// same tracker wake it at once.
//
// Policy.Deadlines bound single signals (boot stages), measured from the
// attempt's start or the previous stage's signal ([SignalDeadline]); they are
// stored in the record like the attempt deadline, and a passed one ends the
// attempt as TimedOut with the stage's reason ([ReasonStageTimeout]:
// IPXETimeout, IgnitionTimeout, BootStateTimeout).
//
// # Address binding and late callbacks
//
// StartOptions.AllowedSources binds an attempt to its machine's addresses:
// fetches and callbacks from other addresses get 403 and write nothing (the
// fetch is not served). A callback after the attempt ended without booting
// gets 409 ([ErrAttemptEnded]) and is not recorded.
//
// # HTTP
//
// [Handler] serves POST /bootstate (a JSON [Request]); it answers 200 only
// after the store write succeeded and 503 when the store fails, so callers
// retry. [Tracker.FetchMiddleware] wraps the host's own iPXE-script and
// Ignition handlers and records the fetch before the wrapped handler serves.
//
// # Authentication
//
// A per-boot token, HMAC-SHA256 over the system UUID and attempt ID keyed
// with Config.Secret ([Tracker.Token]), is embedded by the host in what it
// serves and presented by the booted server. Missing or wrong tokens get 401
// and nothing is recorded. Config.InsecureSkipAuth turns this off for labs.
// Tokens and the secret never appear in records, logs or errors.
//
// # Jobs
//
// [Tracker.StartBootWithPolicy] and [Tracker.BootOutcome] implement the job
// package's optional BootPolicyStarter and BootOutcomeReporter through the
// alias types [JobAttemptPolicy] and [JobBootOutcome], without importing job.
//
// See docs/bootstate.md for the decisions behind this shape.
package bootstate
