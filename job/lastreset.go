package job

import (
	"context"
	"errors"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/timestamp"
)

// A power cycle leaves no trace in the power state (the server is On
// before and after), so a step resumed after a crash cannot tell from it
// whether the cycle it had sent landed. Where the BMC reports when the
// system last reset (bmc.LastResetReader, Redfish LastResetTime), the task
// stores that time with the cycle's intent and compares it on resume
// (issue 22); elsewhere the cycle is sent again (at least once). The
// power cycle a kind asks for as a follow-up (cycleSystem, followup.go:
// a wait-for-boot retry's, a firmware update's reset) is sent this way.

// markReset reads, before the intent of a power cycle that cannot be read
// back is stored (a wait-for-boot retry's, a firmware update's reset),
// when the system last reset (bmc.LastResetReader), into the task's
// LastResetBefore: the write of the intent carries it, so a step resumed
// after a crash between the accepted cycle and the stored result can tell
// whether the cycle landed (cycleLanded). A read changes nothing on the
// server, so it needs no intent of its own. A driver or BMC that cannot
// tell, or a failed read, leaves it nil: the cycle is then sent again after
// such a crash (at least once, docs/jobs.md "Task phases").
func (r *stepRun) markReset(ctx context.Context, drv bmc.Driver, i int) {
	ts := &r.j.Status.Tasks[i]
	ts.LastResetBefore = nil
	lr, ok := drv.(bmc.LastResetReader)
	if !ok {
		return
	}
	t, err := lr.LastResetTime(ctx)
	if err != nil {
		if !errors.Is(err, bmc.ErrNotSupported) {
			r.log.Info("reading the system's last reset time failed; a crash before the power cycle's result is stored will cycle again", "task", i+1, "error", err.Error())
		}
		return
	}
	ts.LastResetBefore = timestamp.Ptr(t.UTC())
	r.resetMarked = i + 1
}

// cycleLanded reports whether the power cycle of task i (its current try)
// was
// already sent and landed: the step resumes one whose intent (with
// LastResetBefore) an earlier step stored, and the BMC now reports another
// last reset time. Cycle and reset are not observable in the power state,
// but this is. A transient error reading it is returned (the cycle waits
// for the retry); a BMC that cannot tell is answered "no", and the cycle is
// sent (again).
func (r *stepRun) cycleLanded(ctx context.Context, drv bmc.Driver, i int) (bool, error) {
	ts := &r.j.Status.Tasks[i]
	before := ts.LastResetBefore
	if before == nil || r.resetMarked == i+1 {
		return false, nil // no mark, or this step marked it and has sent nothing since
	}
	lr, ok := drv.(bmc.LastResetReader)
	if !ok {
		return false, nil
	}
	now, err := lr.LastResetTime(ctx)
	if err != nil {
		if bmc.IsTransient(err) {
			return false, err
		}
		return false, nil
	}
	if now.Equal(before.Time) {
		return false, nil
	}
	r.log.Info("the power cycle was sent and landed before its result was stored (the system's last reset time moved); not sending it again",
		"task", i+1, "lastResetBefore", before.Time, "lastReset", now)
	return true, nil
}
