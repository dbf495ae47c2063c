package job

import (
	"context"
	"errors"
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
//     component already at it succeeds with no update sent;
//   - send starts the update at most once per job: StartFirmwareUpdate is
//     never retried by the driver, and the task stores StartSent just
//     before the request. A later attempt that finds StartSent but no task
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
//     Update.AwaitToActivate), the task resets what it names, once, with
//     Reset auto: the system by a power cycle (through the PowerGate, as a
//     power task's), the BMC by a warm reset; with Reset none it fails with
//     reason ResetRequired. A crash between the reset and storing it sends
//     the reset again (at least once, as a power cycle's);
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
func firmwarePoll(cfg *StepperConfig) time.Duration { return cfg.SlowPollInterval * 5 / 2 }

func (k firmwareKind) defaultTimeout(cfg *StepperConfig) time.Duration {
	return max(cfg.DefaultTaskTimeout, firmwareTimeout)
}
func (k firmwareKind) grace(*StepperConfig) time.Duration { return 0 }
func (k firmwareKind) usesBMC() bool                      { return true }
func (k firmwareKind) recheckable() bool                  { return true }

// preflight: the BMC takes firmware updates and lists the component (its
// version is read; the task reads it again before it starts an update).
func (k firmwareKind) preflight(ctx context.Context, r *stepRun, drv bmc.Driver, _ int) error {
	fu, err := k.updater(r, drv)
	if err != nil || k.a.Component == "" {
		return err
	}
	_, err = fu.FirmwareVersion(ctx, k.a.Component)
	return err
}

func (k firmwareKind) image() bmc.FirmwareImage {
	return bmc.FirmwareImage{URI: k.a.ImageURI, Component: k.a.Component}
}

// status is the current task's Status.Firmware, created on first use.
func (k firmwareKind) status(r *stepRun) *task.FirmwareStatus {
	ts := &r.j.Status.Tasks[r.j.Status.CurrentTask]
	if ts.Firmware == nil {
		ts.Firmware = &task.FirmwareStatus{}
	}
	return ts.Firmware
}

func firmwareRef(fs *task.FirmwareStatus) bmc.FirmwareTaskRef {
	return bmc.FirmwareTaskRef{TaskURI: fs.TaskURI, MonitorURI: fs.MonitorURI, TaskID: fs.TaskID}
}

func (k firmwareKind) updater(r *stepRun, drv bmc.Driver) (bmc.FirmwareUpdater, error) {
	if fu, ok := drv.(bmc.FirmwareUpdater); ok {
		return fu, nil
	}
	return nil, notSupported(r.ep, "update firmware")
}

func (k firmwareKind) send(ctx context.Context, r *stepRun, drv bmc.Driver) error {
	fu, err := k.updater(r, drv)
	if err != nil {
		return err
	}
	fs := k.status(r)
	if !firmwareRef(fs).IsZero() {
		return nil // started (or found) earlier: follow that update
	}
	i := r.j.Status.CurrentTask
	// Check first, always: a component already at the version gets no
	// update (issue 34: a fresh task re-flashed Gigabyte, DL325, EX235a and
	// the DMTF mockup at their current version). The check that follows
	// sees the version and succeeds.
	if k.a.Component != "" {
		v, err := fu.FirmwareVersion(ctx, k.a.Component)
		if err != nil {
			return err
		}
		fs.Version = v
		if v == k.a.Version {
			r.log.Info("the component is at the version already; no update sent", "task", i+1, "version", v)
			return nil
		}
	}
	if fs.StartSent {
		// A start may have reached the BMC and its answer was lost (a
		// 5xx, a timeout, a reset connection, a crash before the answer
		// was stored): look for its update before anything else.
		ref, found, err := fu.FindFirmwareUpdate(ctx, k.image())
		if err != nil {
			return err
		}
		if found {
			r.log.Info("found the firmware update an earlier attempt started; following it", "task", i+1, "bmcTask", ref.String())
			k.follow(fs, ref)
			return nil
		}
		// Not found: an update that ended meanwhile may match no image (a
		// finished multipart push): read the version once more.
		if v, err := fu.FirmwareVersion(ctx, k.a.Component); err == nil && v == k.a.Version {
			fs.Version = v
			r.log.Info("the component reached the version while the task looked for the update; not starting another", "task", i+1)
			return nil
		}
		// Not found proves nothing started only on a BMC that lists every
		// update it starts as a task; elsewhere (iLO, BMCs without a
		// TaskService) a second start could flash twice.
		lists := false
		if l, ok := fu.(bmc.FirmwareTaskLister); ok {
			if lists, err = l.ListsFirmwareTasks(ctx); err != nil {
				return err
			}
		}
		if !lists {
			return &taskFailure{conditions.ReasonFirmwareStartUnknown, fmt.Sprintf(
				"an earlier start of the update got no answer (last error: %s), and this BMC lists no update tasks, so whether it started cannot be told; not sent again (a second start could flash twice): check the BMC, then run a new job",
				truncate(r.j.Status.Tasks[i].LastError, 200))}
		}
		r.log.Info("the BMC lists no update from the earlier start; starting it again", "task", i+1)
	}
	// Stored before the request, so that a later attempt knows the start
	// may have reached the BMC (and this write proves the copy current).
	fs.StartSent = true
	if err := r.persist(ctx, r.j); err != nil {
		return err
	}
	ref, err := fu.StartFirmwareUpdate(ctx, k.image())
	if err != nil {
		return err
	}
	k.follow(fs, ref)
	return nil
}

// follow records the BMC task carrying out the update (a zero ref where
// the BMC names none: the version is then polled).
func (k firmwareKind) follow(fs *task.FirmwareStatus, ref bmc.FirmwareTaskRef) {
	fs.TaskURI, fs.MonitorURI, fs.TaskID = ref.TaskURI, ref.MonitorURI, ref.TaskID
	fs.State, fs.Percent = string(bmc.FirmwareTaskRunning), -1
}

func (k firmwareKind) check(ctx context.Context, r *stepRun, drv bmc.Driver, _ bool) (bool, string, error) {
	fu, err := k.updater(r, drv)
	if err != nil {
		return false, "", err
	}
	fs := k.status(r)
	ref := firmwareRef(fs)
	if ref.IsZero() {
		// Nothing started: is the version there already?
		return k.checkVersion(ctx, r, fu, "")
	}
	st, err := fu.FirmwareUpdateStatus(ctx, ref)
	if err != nil {
		return k.unreachable(ctx, r, err)
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
	return k.checkVersion(ctx, r, fu, "update "+strings.ToLower(string(st.State))+", ")
}

// checkVersion reads the component's version: the task's effect.
func (k firmwareKind) checkVersion(ctx context.Context, r *stepRun, fu bmc.FirmwareUpdater, prefix string) (bool, string, error) {
	v, err := fu.FirmwareVersion(ctx, k.a.Component)
	if err != nil {
		return k.unreachable(ctx, r, err)
	}
	fs := k.status(r)
	fs.Version = v
	if v == k.a.Version {
		return true, fmt.Sprintf("%s%s at version %s", prefix, k.a.Component, v), nil
	}
	return false, fmt.Sprintf("%s%s at version %s, want %s", prefix, k.a.Component, v, k.a.Version), nil
}

// unreachable turns a transient error after the task reset the BMC or the
// system into "not yet" (the BMC, or its inventory, comes back), as a
// bmcReset task does; before any reset it is the error.
func (k firmwareKind) unreachable(ctx context.Context, r *stepRun, err error) (bool, string, error) {
	if k.status(r).ResetTime == nil {
		return false, "", err
	}
	return r.notAnswering(ctx, err, "not answering after the reset yet: ")
}

func (k firmwareKind) notYet(ctx context.Context, r *stepRun, i int, observed string) (StepResult, error) {
	fs := k.status(r)
	poll := StepResult{RequeueAfter: firmwarePoll(&r.s.cfg)}
	if fs.ResetTarget == "" || fs.ResetTime != nil {
		// The read is stored (state, percent, version), so a host watching
		// the job sees the update's progress: one write per poll of an
		// update that takes minutes.
		if err := r.persist(ctx, r.j); err != nil {
			return StepResult{}, err
		}
		return poll, nil
	}
	if k.a.Reset == task.FirmwareResetNone {
		return r.failTask(ctx, i, conditions.ReasonResetRequired,
			fmt.Sprintf("the BMC asks for a reset of the %s before the firmware takes effect, and reset is none: add a reset task and another firmwareUpdate task", fs.ResetTarget))
	}
	if err := r.confirm(ctx); err != nil { // the reset changes state: prove the copy current first
		return StepResult{}, err
	}
	drv, err := r.driver(ctx)
	if err != nil {
		return r.handleErr(ctx, i, err, true)
	}
	cctx := r.callCtx(ctx, i)
	if fs.ResetTarget == string(bmc.FirmwareResetBMC) {
		if err := r.resetBMC(cctx, drv, bmc.BMCResetWarm); err != nil {
			return r.handleErr(ctx, i, err, false)
		}
	} else if res, done, err := k.cycle(ctx, cctx, r, drv, i); done {
		return res, err
	}
	fs.ResetTime = timestamp.Ptr(r.now)
	r.j.Status.Tasks[i].LastResetBefore = nil // the result of sending is stored: done with
	r.log.Info("reset for the firmware update to take effect", "task", i+1, "target", fs.ResetTarget)
	r.recordWire()
	if err := r.persist(ctx, r.j); err != nil {
		return StepResult{}, err
	}
	return poll, nil
}

// cycle power-cycles the system for the update, once: the system's last
// reset time (where the BMC reports it) is stored with the cycle's intent,
// and a step resumed after a crash between the cycle and storing it finds
// the time moved and does not cycle again (lastreset.go). done is set when
// notYet must return (res, err) instead of recording the reset: the power
// gate holds the cycle back, the intent's write failed, or an error.
func (k firmwareKind) cycle(ctx, cctx context.Context, r *stepRun, drv bmc.Driver, i int) (res StepResult, done bool, err error) {
	ts := &r.j.Status.Tasks[i]
	if ts.LastResetBefore != nil {
		landed, err := r.cycleLanded(cctx, drv, i)
		if err != nil {
			res, err = r.handleErr(ctx, i, err, false)
			return res, true, err
		}
		if landed {
			return StepResult{}, false, nil
		}
	} else {
		r.markReset(cctx, drv, i)
		if ts.LastResetBefore != nil {
			if err := r.persist(ctx, r.j); err != nil { // the reset's intent, with the time
				return StepResult{}, true, err
			}
		}
	}
	send, release, err := r.gatePower(cctx, i) // a power cycle may power the server on
	if err != nil {
		var g *gated
		if errors.As(err, &g) {
			return StepResult{RequeueAfter: g.wait}, true, nil
		}
		res, err = r.handleErr(ctx, i, err, false)
		return res, true, err
	}
	err = drv.SetPower(send, bmc.PowerActionCycle)
	release(ctx)
	if err != nil {
		res, err = r.handleErr(ctx, i, err, false)
		return res, true, err
	}
	return StepResult{}, false, nil
}
