package job

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

func init() {
	registerKind("firmwareUpdate", func(s *task.Spec) kind { return firmwareKind{s.FirmwareUpdate} })
}

// firmwareKind installs a firmware image through the BMC
// (bmc.FirmwareUpdater) and succeeds once the component reports the wanted
// version. Its steps (docs/firmware.md, "The firmwareUpdate task"):
//
//   - check first, always: before any start the version is read, and a
//     component already at it, or at one of SatisfiedBy (a later version
//     of a firmware path), succeeds with no update sent;
//   - send starts the update at most once per job: StartFirmwareUpdate is
//     never retried by the driver, and prepare records StartSent, which the
//     Stepper stores just before the request. A later attempt that finds
//     StartSent but no task
//     reference (the answer was a 5xx, a timeout, a reset connection, or
//     the runner crashed before storing it) looks for the update among the
//     BMC's tasks (FindFirmwareUpdate) and follows it; not found, it starts
//     again only on a BMC that lists every update it starts as a task
//     (bmc.FirmwareTaskLister), and elsewhere fails with reason
//     FirmwareStartUnknown rather than risk a second flash;
//   - the BMC task's reference is stored (Status.Firmware) with the result of
//     sending, before the task waits on it; afterwards every step reads the
//     task once (state, percent) and never sends the update again;
//   - when the BMC asks for a reset (task messages such as
//     Update.AwaitToActivate), the task has what it names reset, once, with
//     Reset auto, a follow-up the Stepper sends: the system by a power cycle
//     (through the PowerGate, as a power task's; an off server is powered
//     on), the BMC by a warm reset (the bmcReset kind's action); with Reset
//     none it fails with reason ResetRequired. A crash between the reset
//     and storing it sends the reset again unless the BMC reports the
//     system's last reset time (lastreset.go): at least once;
//   - every read is stored (state, percent, the version read), so a host
//     sees the progress: one write per poll;
//   - once the BMC task ended (or is gone, as after a reset some BMCs forget
//     it), the component's version is read until it is the wanted one, or
//     the task times out (1 hour by default) with the last version read in
//     its message. A failed BMC task fails the task with its messages.
type firmwareKind struct{ a *task.FirmwareUpdateAction }

// firmwareTimeout is a firmware update's default timeout: updates of some
// components take 30 minutes and more, a reset included.
const firmwareTimeout = time.Hour

// firmwarePoll is the delay between two reads of an update's BMC task:
// 2.5 SlowPollIntervals (5 s by default), since an update takes minutes and
// each read costs the BMC a request.
func firmwarePoll(c *kindConfig) time.Duration { return c.slowPollInterval * 5 / 2 }

func (k firmwareKind) defaultTimeout(c *kindConfig) time.Duration {
	return max(c.defaultTaskTimeout, firmwareTimeout)
}
func (k firmwareKind) usesBMC() bool     { return true }
func (k firmwareKind) recheckable() bool { return true }

// preflight: the BMC takes firmware updates and lists the component (its
// version is read; the task reads it again before it starts an update).
func (k firmwareKind) preflight(ctx context.Context, t *taskView) error {
	fu, err := k.updater(t)
	if err != nil || k.a.Component == "" {
		return err
	}
	_, err = fu.FirmwareVersion(ctx, k.a.Component)
	return err
}

func (k firmwareKind) image() bmc.FirmwareImage {
	return bmc.FirmwareImage{URI: k.a.ImageURI, Component: k.a.Component}
}

// status is the task's Status.Firmware, created on first use.
func (k firmwareKind) status(t *taskView) *task.FirmwareStatus {
	if t.status.Firmware == nil {
		t.status.Firmware = &task.FirmwareStatus{}
	}
	return t.status.Firmware
}

func firmwareRef(fs *task.FirmwareStatus) bmc.FirmwareTaskRef {
	return bmc.FirmwareTaskRef{TaskURI: fs.TaskURI, MonitorURI: fs.MonitorURI, TaskID: fs.TaskID}
}

func (k firmwareKind) updater(t *taskView) (bmc.FirmwareUpdater, error) {
	if fu, ok := t.BMC.(bmc.FirmwareUpdater); ok {
		return fu, nil
	}
	return nil, notSupported(t.ep, "update firmware")
}

// prepare decides, with reads only, whether this attempt starts the
// update, and if so records StartSent for the Stepper to store before the
// request (so that a later attempt knows the start may have reached the
// BMC). It starts nothing when an update was started (or found) earlier,
// when the component is at the version already (issue 34: a fresh task
// re-flashed Gigabyte, DL325, EX235a and the DMTF mockup at their current
// version), or when an earlier start whose answer was lost is found.
func (k firmwareKind) prepare(ctx context.Context, t *taskView) (prep, error) {
	fu, err := k.updater(t)
	if err != nil {
		return prep{}, err
	}
	fs := k.status(t)
	if !firmwareRef(fs).IsZero() {
		return prep{skip: true}, nil // started (or found) earlier: follow that update
	}
	if k.a.Component != "" {
		v, err := fu.FirmwareVersion(ctx, k.a.Component)
		if err != nil {
			return prep{}, err
		}
		fs.Version = v
		if k.a.Satisfies(v) {
			t.log.Info("the component is at a version that satisfies the task already; no update sent", "task", t.Task+1, "version", v, "want", k.a.Version)
			return prep{skip: true}, nil
		}
	}
	if fs.StartSent {
		if skip, err := k.lostStart(ctx, t, fu, fs); skip || err != nil {
			return prep{skip: skip}, err
		}
	}
	fs.StartSent = true
	return prep{store: true}, nil
}

// lostStart looks for the update of an earlier start that may have reached
// the BMC with its answer lost (a 5xx, a timeout, a reset connection, a
// crash before the answer was stored). skip: it was found and is followed,
// or the component reached the version meanwhile. It fails the task with
// FirmwareStartUnknown where a second start could flash twice: a BMC that
// does not list every update it starts as a task.
func (k firmwareKind) lostStart(ctx context.Context, t *taskView, fu bmc.FirmwareUpdater, fs *task.FirmwareStatus) (skip bool, err error) {
	ref, found, err := fu.FindFirmwareUpdate(ctx, k.image())
	if err != nil {
		return false, err
	}
	if found {
		t.log.Info("found the firmware update an earlier attempt started; following it", "task", t.Task+1, "bmcTask", ref.String())
		k.follow(fs, ref)
		return true, nil
	}
	// Not found: an update that ended meanwhile may match no image (a
	// finished multipart push): read the version once more.
	if v, err := fu.FirmwareVersion(ctx, k.a.Component); err == nil && k.a.Satisfies(v) {
		fs.Version = v
		t.log.Info("the component reached the version while the task looked for the update; not starting another", "task", t.Task+1)
		return true, nil
	}
	// Not found proves nothing started only on a BMC that lists every
	// update it starts as a task; elsewhere (iLO, BMCs without a
	// TaskService) a second start could flash twice.
	lists := false
	if l, ok := fu.(bmc.FirmwareTaskLister); ok {
		if lists, err = l.ListsFirmwareTasks(ctx); err != nil {
			return false, err
		}
	}
	if !lists {
		return false, &taskFailure{conditions.ReasonFirmwareStartUnknown, fmt.Sprintf(
			"an earlier start of the update got no answer (last error: %s), and this BMC lists no update tasks, so whether it started cannot be told; not sent again (a second start could flash twice): check the BMC, then run a new job",
			truncate(t.status.LastError, 200))}
	}
	t.log.Info("the BMC lists no update from the earlier start; starting it again", "task", t.Task+1)
	return false, nil
}

// send starts the update (StartSent stored before it, see prepare) and
// records the BMC task carrying it out.
func (k firmwareKind) send(ctx context.Context, t *taskView) error {
	fu, err := k.updater(t)
	if err != nil {
		return err
	}
	ref, err := fu.StartFirmwareUpdate(ctx, k.image())
	if err != nil {
		return err
	}
	k.follow(k.status(t), ref)
	return nil
}

// follow records the BMC task carrying out the update (a zero ref where
// the BMC names none: the version is then polled).
func (k firmwareKind) follow(fs *task.FirmwareStatus, ref bmc.FirmwareTaskRef) {
	fs.TaskURI, fs.MonitorURI, fs.TaskID = ref.TaskURI, ref.MonitorURI, ref.TaskID
	fs.State, fs.Percent = string(bmc.FirmwareTaskRunning), -1
}

func (k firmwareKind) check(ctx context.Context, t *taskView) (bool, string, error) {
	fu, err := k.updater(t)
	if err != nil {
		return false, "", err
	}
	fs := k.status(t)
	ref := firmwareRef(fs)
	if ref.IsZero() {
		// Nothing started: is the version there already?
		return k.checkVersion(ctx, t, fu, "")
	}
	st, err := fu.FirmwareUpdateStatus(ctx, ref)
	if err != nil {
		return false, "", k.unreachable(t, err)
	}
	fs.State, fs.Percent = string(st.State), st.Percent
	if st.NeedsReset && fs.ResetTime == nil {
		fs.ResetTarget = string(st.Reset)
		if st.Reset == bmc.FirmwareResetUnspecified {
			fs.ResetTarget = string(bmc.FirmwareResetSystem)
		}
		return false, fmt.Sprintf("update %s; the BMC asks for a reset of the %s", strings.ToLower(string(st.State)), fs.ResetTarget), nil
	}
	switch st.State {
	case bmc.FirmwareTaskRunning:
		if st.Percent >= 0 {
			return false, fmt.Sprintf("update running (%d%%)", st.Percent), nil
		}
		return false, "update running", nil
	case bmc.FirmwareTaskFailed:
		msg := "the BMC's firmware update task failed"
		if len(st.Messages) > 0 {
			msg += ": " + strings.Join(st.Messages, "; ")
		}
		return false, "", &taskFailure{conditions.ReasonBMCError, msg}
	}
	return k.checkVersion(ctx, t, fu, "update "+strings.ToLower(string(st.State))+", ")
}

// checkVersion reads the component's version: the task's effect, Version
// or one of SatisfiedBy (the message says which).
func (k firmwareKind) checkVersion(ctx context.Context, t *taskView, fu bmc.FirmwareUpdater, prefix string) (bool, string, error) {
	v, err := fu.FirmwareVersion(ctx, k.a.Component)
	if err != nil {
		return false, "", k.unreachable(t, err)
	}
	fs := k.status(t)
	fs.Version = v
	if v == k.a.Version {
		return true, fmt.Sprintf("%s%s at version %s", prefix, k.a.Component, v), nil
	}
	if k.a.Satisfies(v) {
		return true, fmt.Sprintf("%s%s at version %s, which satisfies the task (satisfiedBy; its version is %s)", prefix, k.a.Component, truncate(v, 80), truncate(k.a.Version, 80)), nil
	}
	return false, fmt.Sprintf("%s%s at version %s, want %s", prefix, k.a.Component, v, k.a.Version), nil
}

// unreachable makes a transient error after the task reset the BMC or the
// system "not yet" (the BMC, or its inventory, comes back), as a bmcReset
// task does; before any reset it is the error.
func (k firmwareKind) unreachable(t *taskView, err error) error {
	if k.status(t).ResetTime == nil {
		return err
	}
	return &notAnswering{"not answering after the reset yet: ", err}
}

// notYet stores each read (state, percent, version), so a host watching
// the job sees the update's progress: one write per poll of an update that
// takes minutes. When the BMC asks for a reset, the task has it carried out
// once (a follow-up: the system's power cycle, or a warm reset of the BMC),
// or fails with ResetRequired where its reset is none.
func (k firmwareKind) notYet(_ context.Context, t *taskView, _ string) (decision, error) {
	fs := k.status(t)
	if fs.ResetTarget == "" || fs.ResetTime != nil {
		return storeThenPoll(firmwarePoll(t.cfg)), nil
	}
	if k.a.Reset == task.FirmwareResetNone {
		return failWith(conditions.ReasonResetRequired,
			fmt.Sprintf("the BMC asks for a reset of the %s before the firmware takes effect, and reset is none: add a reset task and another firmwareUpdate task", fs.ResetTarget)), nil
	}
	if fs.ResetTarget == string(bmc.FirmwareResetBMC) {
		return thenFollow(followUp{send: &task.Spec{BMCReset: &task.BMCResetAction{Type: task.BMCResetWarm}}}), nil
	}
	return thenFollow(followUp{cycle: true}), nil
}

// followed records the reset (sent, or found landed): the BMC's task and
// the version are polled from now on.
func (k firmwareKind) followed(_ context.Context, t *taskView, _ followUp, _ bool, _ string) (decision, error) {
	fs := k.status(t)
	fs.ResetTime = timestamp.Ptr(t.now)
	t.log.Info("reset for the firmware update to take effect", "task", t.Task+1, "target", fs.ResetTarget)
	return storeThenPoll(firmwarePoll(t.cfg)), nil
}
