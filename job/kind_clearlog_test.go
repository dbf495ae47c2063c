package job_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

var sel = bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "SEL"}

func clearLog(ref bmc.LogRef) task.Spec { return task.Spec{ClearLog: &task.ClearLogAction{Log: ref}} }

func entryIDs(es []task.LogEntry) []string {
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	return ids
}

// The entries are stored with the job before the clear is sent; the clear
// is read back.
func TestClearLogStoresEntriesBeforeTheClear(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	var storedAtClear []string
	e.bmc.SetHook(fake.MethodClearLog, func(context.Context, fake.Call) error {
		if st := e.crd.load(t).Status.Tasks[0].ClearLog; st != nil {
			storedAtClear = entryIDs(st.Entries)
		}
		return nil
	})
	j, _ := e.reconcile(t, newJob(clearLog(sel)), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	st := j.Status.Tasks[0].ClearLog
	require.NotNil(t, st)
	assert.Equal(t, []string{"3", "2", "1"}, entryIDs(st.Entries), "newest first")
	assert.Equal(t, []string{"3", "2", "1"}, storedAtClear, "stored before the clear went out")
	assert.Equal(t, bmc.SeverityCritical, st.Entries[0].Severity)
	assert.Equal(t, "PSU 2 input lost", st.Entries[0].Message)
	require.NotNil(t, st.Entries[0].Created)
	assert.False(t, st.Truncated)
	assert.NotNil(t, st.ReadTime)
	assert.Len(t, e.bmc.CallsTo(fake.MethodClearLog), 1)
	assert.Empty(t, e.bmc.Logs()[0].Entries, "the BMC's SEL is empty")
	assert.Contains(t, j.Status.Tasks[0].Message, "cleared log system/SEL")
	assert.Contains(t, j.Status.Tasks[0].Message, "3 entries read before the clear")
}

// stepDying runs one step whose persist stores each write and "dies" (the
// step's error) at the first write for which die is true.
func (e *stepEnv) stepDying(t *testing.T, j *job.Job, die func(*job.Job) bool) {
	t.Helper()
	stop := errors.New("died")
	_, err := e.stepper.Step(context.Background(), j, func(ctx context.Context, j *job.Job) error {
		require.NoError(t, e.crd.persist(ctx, j))
		if die(j) {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
}

// A crash between storing the entries and sending the clear: the resumed
// task keeps them, adds the entry the BMC recorded meanwhile, and clears
// once.
func TestClearLogCrashBetweenStoreAndClear(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j := e.intentStored(t, newJob(clearLog(sel)))
	e.stepDying(t, j, func(j *job.Job) bool { return j.Status.Tasks[0].ClearLog != nil })
	stored := e.crd.load(t)
	require.Equal(t, []string{"3", "2", "1"}, entryIDs(stored.Status.Tasks[0].ClearLog.Entries))
	require.Empty(t, e.bmc.CallsTo(fake.MethodClearLog), "died before the clear")

	e.bmc.AddLogEntry(sel, bmc.LogEntry{Severity: bmc.SeverityWarning, Message: "Fan 1 speed low"})
	j, _ = e.reconcile(t, stored, 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Equal(t, []string{"4", "3", "2", "1"}, entryIDs(j.Status.Tasks[0].ClearLog.Entries))
	assert.Len(t, e.bmc.CallsTo(fake.MethodClearLog), 1, "one clear")
	assert.Empty(t, e.bmc.Logs()[0].Entries)
}

// A crash after the clear, before its result was stored: the recheck sees
// the stored entries gone and does not clear again.
func TestClearLogCrashAfterTheClear(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j := e.intentStored(t, newJob(clearLog(sel)))
	stop := errors.New("died")
	_, err := e.stepper.Step(context.Background(), j, func(ctx context.Context, j *job.Job) error {
		if len(e.bmc.CallsTo(fake.MethodClearLog)) > 0 {
			return stop // the result of the clear is never stored
		}
		return e.crd.persist(ctx, j)
	})
	require.ErrorIs(t, err, stop)
	stored := e.crd.load(t)
	require.Equal(t, task.PhaseStarted, stored.Status.Tasks[0].Phase)
	// The BMC records its own entry for the clear.
	e.bmc.AddLogEntry(sel, bmc.LogEntry{ID: "1", Message: "Log area reset/cleared", MessageID: "SEL.EventLogging.0x02"})
	j, _ = e.reconcile(t, stored, 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	assert.Len(t, e.bmc.CallsTo(fake.MethodClearLog), 1, "not cleared again")
	assert.Equal(t, "effect already present", j.Status.Tasks[0].Message)
	assert.Len(t, j.Status.Tasks[0].ClearLog.Entries, 3)
}

// MaxEntries keeps the newest; the log is cleared all the same.
func TestClearLogMaxEntries(t *testing.T) {
	e := newStepEnv(t, fake.Options{Power: bmc.PowerOn}, job.StepperConfig{})
	j, _ := e.reconcile(t, newJob(task.Spec{ClearLog: &task.ClearLogAction{Log: sel, MaxEntries: 2}}), 10)
	assertCompleted(t, j, conditions.ResultSucceeded)
	st := j.Status.Tasks[0].ClearLog
	assert.Equal(t, []string{"3", "2"}, entryIDs(st.Entries))
	assert.True(t, st.Truncated)
	assert.Contains(t, j.Status.Tasks[0].Message, "the newest 2 entries (older ones were not kept)")
	assert.Empty(t, e.bmc.Logs()[0].Entries)
}

// A BMC without the log, without ClearLog, or with a log it does not offer
// to clear: the job fails its preflight NotSupported and sends nothing, not
// even the power change before the clear.
func TestClearLogPreflightNotSupported(t *testing.T) {
	noClear := fake.DefaultLogs()
	noClear[0].Clearable = false
	for name, c := range map[string]struct {
		opts fake.Options
		ref  bmc.LogRef
		want string
	}{
		"no such log":   {fake.Options{}, bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "IML"}, "has no log system/IML (it has: system/SEL, manager/Log1)"},
		"no clear":      {fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityEventLogClear}}, sel, "not supported"},
		"no logs":       {fake.Options{Unsupported: []bmc.Capability{bmc.CapabilityEventLogs}}, sel, "not supported"},
		"not clearable": {fake.Options{Logs: noClear}, sel, "does not offer to clear it"},
	} {
		t.Run(name, func(t *testing.T) {
			c.opts.Power = bmc.PowerOn
			e := newStepEnv(t, c.opts, job.StepperConfig{})
			j, _ := e.reconcile(t, newJob(powerOff, clearLog(c.ref)), 10)
			assertCompleted(t, j, conditions.ResultFailed)
			assert.Equal(t, conditions.ReasonNotSupported, j.Status.Tasks[1].Reason)
			assert.Contains(t, j.Status.Tasks[1].Message, c.want)
			assert.Empty(t, e.bmc.CallsTo(fake.MethodSetPower))
			assert.Empty(t, e.bmc.CallsTo(fake.MethodClearLog))
		})
	}
}

func TestClearLogSpecErrors(t *testing.T) {
	for _, c := range []struct {
		a    task.ClearLogAction
		want string
	}{
		{task.ClearLogAction{Log: bmc.LogRef{Scope: "chassis", ID: "SEL"}}, `clearLog.log.scope: "chassis" is not one of system, manager`},
		{task.ClearLogAction{Log: bmc.LogRef{Scope: bmc.LogScopeSystem}}, "clearLog.log.id"},
		{task.ClearLogAction{Log: bmc.LogRef{Scope: bmc.LogScopeSystem, ID: "../SEL"}}, "clearLog.log.id"},
		{task.ClearLogAction{Log: sel, MaxEntries: 1001}, "clearLog.maxEntries: 1001"},
	} {
		s := task.Spec{ClearLog: &c.a}
		assert.ErrorContains(t, s.Validate(), c.want)
	}
	s := clearLog(sel)
	assert.NoError(t, s.Validate())
	assert.Equal(t, "clear log system/SEL", s.Describe())
	assert.Equal(t, "clearLog", s.Action())
}
