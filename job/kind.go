package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
)

// The kind contract: one for every task kind, built-in and custom
// (docs/jobs.md, "Adding a task kind"; docs/custom-kinds.md).
//
// A kind declares what it needs from the BMC (its preflight), sends its
// action, and reads the effect back. Everything else is the Stepper's, the
// same for every kind: it stores the job (the intent before the action, each
// result after it), fences (no state-changing request of a step before a
// write of that step succeeded, confirm.go), dials and chooses the
// connection, bounds and tags every call, retries transient errors, maps
// errors to task outcomes and completes tasks and jobs. A kind never does
// any of that itself: it gets a narrow view of its task (taskView) instead
// of the step, and where it needs more than "keep polling" it returns a
// decision (decision, followUp, prep) that the Stepper carries out.
//
// Programs implement the public half, [Kind] (Validate, Send, Check over a
// [KindTask]). The built-in kinds implement kind: the same Send and Check
// over taskView, which embeds KindTask, and declarations that only the
// built-in kinds may make, each an optional interface below found by type
// assertion. The generic code never names a concrete kind
// (TestNoConcreteKindOutsideItsFile), and a kind file never reaches into
// the step (TestKindsSeeOnlyTheirTask).

// Kind is a task kind the program adds: one type, registered in
// [StepperConfig].Kinds under a domain-qualified name, run by the tasks
// whose spec is task.Spec.Custom with that name (docs/custom-kinds.md).
//
// The Stepper runs it as it runs the built-in kinds: the task's intent is
// stored before Send; after Send, Check is polled until it reports done or
// the task's timeout passes; a task resumed after a crash calls Check first
// and sends again only if it reports not done. Errors are classified as BMC
// errors are ([bmc.IsTransient]: transient ones are retried with backoff;
// [bmc.ErrNotSupported] and [bmc.ErrUnauthorized] fail the task with their
// reasons, anything else with BMCError); [Fail] fails the task with a reason
// of the kind's choosing. Methods are called from many goroutines at once.
type Kind interface {
	// Validate checks a task's params (nil when the task has none). A
	// *task.FieldError's Path is taken as relative to params, so the
	// error reads "tasks[2].custom.params.<Path>: <Msg>".
	Validate(params json.RawMessage) error
	// Send performs the action.
	Send(ctx context.Context, t *KindTask) error
	// Check reads the effect back: done, and what it observed (the task's
	// Message). It must change nothing: [Stepper.InState] calls it too,
	// outside any job, to tell whether the effect is already there.
	Check(ctx context.Context, t *KindTask) (done bool, observed string, err error)
}

// Kinds maps domain-qualified names ("example.com/raid-reset") to the kinds
// a program adds.
type Kinds map[string]Kind

// KindTask is one task of a custom kind, as its Send and Check see it.
type KindTask struct {
	// Params is the task's params, as Validate accepted them.
	Params json.RawMessage
	// BMC is the job's connection to its system's BMC; each request is
	// fenced by the system's lock. Capabilities beyond bmc.Driver are
	// reached by type assertion. Requests sent by other means are not
	// fenced (docs/custom-kinds.md).
	BMC bmc.Driver
	// Job is the job's name, Task the task's index in it.
	Job  string
	Task int
	// Sent, for Check: the action was sent in this step. False for the
	// check of a task resumed after a crash, when the action may or may
	// not have been sent.
	Sent bool
}

// Fail is an error that fails a custom kind's task at once, with
// condition reason reason (e.g. conditions.ReasonVerificationFailed, or
// a CamelCase reason of the kind's own) and message msg.
func Fail(reason, msg string) error { return &taskFailure{reason, msg} }

// Prechecker is implemented by a [Kind] that can tell, with reads only,
// whether a task of it can run on the BMC. The Stepper calls Precheck for
// every task of a job before the job's first action (docs/preflight.md):
// an error wrapping [bmc.ErrNotSupported], or [Fail], ends the job there,
// naming the task, before anything was sent; nil lets it start (return nil
// where the BMC shows nothing either way); other errors are classified as
// Send's. t.Task is the task's index; t.Sent is false.
type Prechecker interface {
	Precheck(ctx context.Context, t *KindTask) error
}

// taskFailure is a permanent task failure with its own reason (e.g. a boot
// that timed out), as opposed to a BMC error: [Fail], and what a built-in
// kind returns for the same.
type taskFailure struct {
	reason, msg string
}

func (e *taskFailure) Error() string { return e.msg }

// kind is a task kind as the Stepper runs it: Kind's Send and Check over
// the task's view, and what the Stepper must know to run it. One file per
// kind (kind_*.go) implements it and registers itself (registerKind), so a
// new kind is one new file here beside the action's type in package task.
// A kind is a value made from its task's spec (it holds its action); it
// keeps no state between calls: what it must remember goes into its task's
// status, which the Stepper stores.
type kind interface {
	// defaultTimeout is the timeout of a task whose Spec has none.
	defaultTimeout(c *kindConfig) time.Duration

	// usesBMC says whether the kind talks to the BMC at all; if not, its
	// view's BMC is nil.
	usesBMC() bool

	// recheckable says whether a task resumed in phase Started may be taken
	// as done when its effect is already there. Actions that end where they
	// started (power cycle, reset) are not: they are sent again.
	recheckable() bool

	// send performs the action (Kind.Send): the state-changing request(s),
	// which the Stepper has fenced (confirm) and, for an action that can
	// power a server on, admitted through the PowerGate.
	send(ctx context.Context, t *taskView) error

	// check reads the effect back (Kind.Check): done, and what was read
	// (the task's Message). t.Sent says whether the action was sent (as
	// opposed to a recheck after a crash); it matters where the BMC cannot
	// report the effect. It may record what it read in t.status.
	check(ctx context.Context, t *taskView) (done bool, observed string, err error)
}

// The optional interfaces: what only some kinds do. Each is a declaration
// the Stepper acts on, or a decision it carries out.

// preflighter is implemented by kinds that need something of the BMC a
// read can check (preflight.go, docs/preflight.md). preflight checks task
// t.Task of the job (not necessarily the current one): nil when the BMC
// advertises what it needs or says nothing either way; a *taskFailure, or
// an error wrapping bmc.ErrNotSupported, when it cannot run; any other
// error as a BMC call's (transient ones are retried as the first task's).
type preflighter interface {
	preflight(ctx context.Context, t *taskView) error
}

// preparer is implemented by kinds that read the BMC before their request
// and may have to store something before it goes out (the boot override to
// put back, a firmware update's StartSent): the Stepper calls prepare just
// before send, stores the job when it asks, and then sends, or not.
type preparer interface {
	prepare(ctx context.Context, t *taskView) (prep, error)
}

// prep is what prepare found.
type prep struct {
	// skip: nothing to send (the effect is there, or an update an earlier
	// attempt started is followed); the read-back follows.
	skip bool
	// store: the kind recorded in its task's status what must be stored
	// before the request goes out.
	store bool
}

// decider is implemented by kinds that decide more than "keep polling"
// after a read-back that did not show the effect (the Stepper's default
// for a kind without it): send again, fail, poll at their own pace, or
// move a stage on with a follow-up action. notYet may record in t.status
// (to be stored by the decision); an error is mapped as a BMC call's.
type decider interface {
	notYet(ctx context.Context, t *taskView, observed string) (decision, error)
}

// follower is implemented by kinds whose decisions ask for follow-up
// actions: once the Stepper carried one out, it calls followed with what
// the follow-up's read-back showed (f.check) and carries out the decision
// it returns. An error is mapped as a BMC call's.
type follower interface {
	followed(ctx context.Context, t *taskView, f followUp, done bool, observed string) (decision, error)
}

// bootWaiter is implemented by kinds that wait for a boot (one attempt each,
// opened before the tasks that power the server on).
type bootWaiter interface {
	// openBoot opens (idempotently) boot attempt attemptID of task t.Task.
	openBoot(ctx context.Context, t *taskView, attemptID string) error
	// bootUnsupported says why tracker b cannot serve the task, or "".
	bootUnsupported(b BootTracker) string
	// grace is how long past its timeout the task's own timer waits: the
	// deadline belongs to the BootTracker.
	grace(c *kindConfig) time.Duration
}

// powerChanger is implemented by kinds that change the power state. The
// Stepper watches the change (powerwatch.go: an event stream opened before
// the request, every read-back noted), polls it on the adaptive schedule,
// and admits an action that can power the server on through the PowerGate.
type powerChanger interface {
	// powerAction is the action the task requests.
	powerAction() bmc.PowerAction
	// boots says whether the action starts the server (on, cycle, reset):
	// the PowerGate admits it, and its success is the boot an emulated
	// one-time override was for (bootrestore.go).
	boots() bool
}

// intentReader is implemented by kinds that read the BMC before their
// intent is stored, on the connection the step has open (the previous
// task's), so that what they record in t.status goes out in the same write
// as that task's result and this one's intent. The Stepper hands what
// readBeforeIntent returned to the task's prepare in the same step
// (taskView.early), so the BMC is asked once.
type intentReader interface {
	readBeforeIntent(ctx context.Context, t *taskView) error
}

// bmcRestarter is implemented by kinds whose action restarts the BMC
// (bmcReset): once it is sent, the Stepper drops the pooled session (a
// restarting BMC forgets its sessions, for every system sharing it), reads
// the effect back through a new one, and takes a transient error of that
// dial as "not answering yet" (notAnswering).
type bmcRestarter interface {
	restartsBMC()
}

// statusChecked is implemented by kinds whose check reads what their task
// stored, not the BMC (rotateCredentials: its stages): on a fresh status
// (Stepper.InState) it cannot tell whether the effect is there.
type statusChecked interface {
	checksStatusOnly()
}

// taskView is one task as its kind sees it during a step, instead of the
// step: the public KindTask (the step's connection, the job's name, the
// task's index, whether the action was sent) and what a built-in kind needs
// beyond it. A kind reads it and records what it read or did in status;
// everything else (storing, fencing, dialing, retrying) is the Stepper's.
type taskView struct {
	KindTask
	// status is the task's status. The kind records here what it read and
	// did (a read's result, the intent of its next stage); the Stepper
	// stores it with the task's intent and results.
	status *task.Status
	// job is the job, read-only: its identity and spec (wait-for-boot's
	// system and boot attempts, the tasks before this one).
	job *Job
	// ep is the BMC's address, for messages.
	ep *bmc.Endpoint
	// log is the step's logger (with the job's name).
	log logr.Logger
	// now is the step's time: what the kind stamps.
	now time.Time
	// cfg is the configuration kinds read.
	cfg *kindConfig
	// early is what this task's readBeforeIntent returned in this step,
	// for its prepare (intentReader).
	early earlyRead
	// waited is set by a kind that waited within the step (the power
	// settle window): the Stepper moves the step's time (now) on.
	waited bool
}

// earlyRead is the outcome of a readBeforeIntent.
type earlyRead struct {
	done bool  // the read was made in this step
	err  error // its error (nil: what it found is in the status)
}

// kindConfig is what kinds read of the Stepper's configuration, defaults
// applied (StepperConfig documents each).
type kindConfig struct {
	defaultTaskTimeout time.Duration
	pollInterval       time.Duration
	slowPollInterval   time.Duration
	resendAfter        time.Duration
	bootPollInterval   time.Duration
	maxVerifyResends   int
	powerSettle        time.Duration
	clock              clock.Clock
	boot               BootTracker
	kinds              Kinds
	// credentials and dialer are the Stepper's, for a kind that logs in
	// with other credentials than the job's connection (rotateCredentials).
	credentials bmc.CredentialsResolver
	dialer      bmc.Dialer
}

// decision is what a kind decides after a read-back that did not show its
// effect (notYet), or after a follow-up (followed); the Stepper carries it
// out. The zero value keeps polling on the Stepper's schedule for the kind
// (PollInterval, SlowPollInterval after SlowPollAfter; for a power change,
// the adaptive one). At most one of resend, fail, follow and succeed is
// set.
type decision struct {
	// after: poll again after this long (0: the Stepper's schedule).
	after time.Duration
	// store: store the task's status first (the kind recorded a read, or
	// the intent of its next stage).
	store bool
	// again: after the store, ask notYet again in this step (the kind
	// moved on to a stage that acts at once).
	again bool
	// resend: send the action again, because of this (the task goes back
	// to phase Started, and the next step rechecks and sends).
	resend string
	// fail: fail the task with this reason and message.
	fail *taskFailure
	// follow: send this follow-up action on the task's behalf, then ask
	// followed.
	follow followUp
	// succeed: the kind finished in notYet: the task succeeds with this
	// message (its status stored with the result).
	succeed string
}

// pollAfter keeps polling, the next read after d (0: the Stepper's
// schedule); storeThenPoll stores the task's status first.
func pollAfter(d time.Duration) decision     { return decision{after: d} }
func storeThenPoll(d time.Duration) decision { return decision{after: d, store: true} }

// storeThenAgain stores the task's status (the intent of the kind's next
// stage) and asks notYet again at once.
func storeThenAgain() decision { return decision{store: true, again: true} }

// resendBecause sends the action again.
func resendBecause(why string) decision { return decision{resend: why} }

// failWith fails the task.
func failWith(reason, msg string) decision { return decision{fail: &taskFailure{reason, msg}} }

// thenFollow sends follow-up f.
func thenFollow(f followUp) decision { return decision{follow: f} }

// followUp is an action the Stepper sends on a task's behalf when the
// task's kind asks for it (a decision): stored, fenced, dialed, gated and
// its errors mapped as the task's own action, then reported to the kind
// (follower). Exactly one of send and cycle is set.
type followUp struct {
	// send is an action sent through its own kind, as a task of that kind
	// sends it (prepare, store, gate, send), on this task's status: an
	// earlier task's boot override set again, a BMC reset.
	send *task.Spec
	// check: read send's effect back once, through its kind.
	check bool
	// cycle is a power cycle of the system (powered on where it is off:
	// bmc/powerplan's rule), sent at most once per intent where the BMC
	// reports when the system last reset (lastreset.go).
	cycle bool
	// store: the kind recorded the follow-up's intent in its status: store
	// it (with the system's last reset time, for a cycle) before the
	// request.
	store bool
}

func (f followUp) set() bool { return f.send != nil || f.cycle }

// notAnswering is what a kind's check returns for a transient error of a
// BMC that restarts after a reset the task sent: the Stepper takes it as
// "not yet" (observed: prefix and the error) instead of retrying, and drops
// an expired session. A permanent error, or the call's context ending, is
// the error itself.
type notAnswering struct {
	prefix string
	err    error
}

func (e *notAnswering) Error() string { return e.prefix + e.err.Error() }
func (e *notAnswering) Unwrap() error { return e.err }

// bmcRestarting is the prefix of what a BMC that restarts shows.
const bmcRestarting = "the BMC is not answering yet: "

// notSupported is the error of a driver that lacks the capability what
// needs.
func notSupported(ep *bmc.Endpoint, what string) error {
	return &bmc.OpError{Op: what, Endpoint: ep.String(), Err: fmt.Errorf("the driver for this BMC cannot %s: %w", what, bmc.ErrNotSupported)}
}

// checkNeed asks drv whether the BMC advertises n (bmc.NeedChecker); a
// driver that cannot tell passes.
func checkNeed(ctx context.Context, drv bmc.Driver, n bmc.Need) error {
	if nc, ok := drv.(bmc.NeedChecker); ok {
		return nc.CheckNeed(ctx, n)
	}
	return nil
}

// kinds maps a task action's JSON name (task.Spec.Action: "power",
// "bootDevice", ...) to its kind's constructor. Each kind file registers its
// own in an init func (registerKind), so a new kind is its file and the
// action's field in task.Spec (docs/jobs.md, "Adding a task kind"). Written
// only by those init funcs, before main runs; read-only afterwards.
var kinds = map[string]func(*task.Spec) kind{}

// registerKind registers the kind of the task action named action; called
// from init funcs only.
func registerKind(action string, mk func(*task.Spec) kind) {
	if _, dup := kinds[action]; dup {
		panic("job: task kind " + action + " registered twice")
	}
	kinds[action] = mk
}

// kindOf is the kind of the action s sets.
func kindOf(s *task.Spec) kind {
	if mk := kinds[s.Action()]; mk != nil {
		return mk(s)
	}
	return invalidKind{}
}

// invalidKind is a spec with no action; validation refuses it, so only a
// record written around Submit can hold one.
type invalidKind struct{}

func (invalidKind) defaultTimeout(c *kindConfig) time.Duration { return c.defaultTaskTimeout }
func (invalidKind) usesBMC() bool                              { return false }
func (invalidKind) recheckable() bool                          { return false }
func (invalidKind) send(context.Context, *taskView) error {
	return &taskFailure{conditions.ReasonInvalidSpec, "task has no action"}
}
func (invalidKind) check(context.Context, *taskView) (bool, string, error) {
	return false, "", &taskFailure{conditions.ReasonInvalidSpec, "task has no action"}
}
