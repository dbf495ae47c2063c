package otel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	bmcotel "github.com/bmckit/bmckit/contrib/otel"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/task"
)

const password = "s3cret-pw"

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestSpansPerJobAndTask(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tracing := bmcotel.New(bmcotel.Options{TracerProvider: tp})

	fleet := fake.NewFleet()
	const ok, refusing = "redfish://10.0.0.1/redfish/v1/Systems/1", "ipmi://10.0.0.3"
	for _, u := range []string{ok, refusing} {
		_, err := fleet.AddNew(u, fake.Options{Power: bmc.PowerOn, Username: "admin", Password: password})
		require.NoError(t, err)
	}
	specs := map[string]job.Spec{
		"netboot": {BMC: ok, CredentialsRef: "lab", Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		}},
		"refused": {BMC: refusing, CredentialsRef: "old", Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		}},
	}
	jobs := jobtest.RunAll(t, job.Config{
		StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			Observer:     tracing.JobObserver(),
			Credentials:  bmc.StaticCredentials{"lab": {Username: "admin", Password: password}, "old": {Username: "admin", Password: "rotated-away"}},
			PollInterval: 2 * time.Millisecond,
		},

		ScanInterval: 20 * time.Millisecond,
	}, specs, 20*time.Second)

	spans := sr.Ended()
	jobSpans := map[string]sdktrace.ReadOnlySpan{}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if s.Name() == "bmckit.job" {
			assert.False(t, s.Parent().IsValid(), "a job span is a root")
			jobSpans[attrs(s)[bmcotel.KeyJobName].AsString()] = s
		} else {
			children[s.Parent().SpanID()] = append(children[s.Parent().SpanID()], s)
		}
	}
	require.Len(t, jobSpans, 2)
	require.Len(t, spans, 2+3+1, "a span per job and per task that started")

	nb, j := jobSpans["netboot"], jobs["netboot"]
	a := attrs(nb)
	assert.Equal(t, "10.0.0.1:443/redfish/v1/Systems/1", a[bmcotel.KeySystem].AsString())
	assert.Equal(t, "redfish", a[bmcotel.KeyDriver].AsString())
	assert.Equal(t, "Succeeded", a[bmcotel.KeyResult].AsString())
	assert.Equal(t, int64(1), a[bmcotel.KeyGeneration].AsInt64())
	assert.Equal(t, j.Status.Wire.Requests, a[bmcotel.KeyRequests].AsInt64())
	assert.Equal(t, codes.Ok, nb.Status().Code)
	assert.True(t, j.Status.StartTime.Equal(nb.StartTime()))
	assert.True(t, j.Status.CompletionTime.Equal(nb.EndTime()))
	kids := children[nb.SpanContext().SpanID()]
	require.Len(t, kids, 3)
	for _, k := range kids {
		assert.Equal(t, nb.SpanContext().TraceID(), k.SpanContext().TraceID())
		ka := attrs(k)
		i := int(ka[bmcotel.KeyTaskIndex].AsInt64())
		ts := j.Status.Tasks[i]
		assert.Equal(t, "bmckit.task "+j.Spec.Tasks[i].Action(), k.Name())
		assert.Equal(t, j.Spec.Tasks[i].Action(), ka[bmcotel.KeyTaskKind].AsString())
		assert.Equal(t, int64(ts.Attempts), ka[bmcotel.KeyAttempt].AsInt64())
		assert.Equal(t, "Succeeded", ka[bmcotel.KeyResult].AsString())
		assert.Equal(t, codes.Ok, k.Status().Code)
		assert.True(t, ts.StartTime.Equal(k.StartTime()), "task %d start", i)
		assert.True(t, ts.CompletionTime.Equal(k.EndTime()), "task %d end", i)
	}

	rf := jobSpans["refused"]
	assert.Equal(t, codes.Error, rf.Status().Code)
	assert.Contains(t, rf.Status().Description, "Unauthorized")
	assert.Equal(t, "Failed", attrs(rf)[bmcotel.KeyResult].AsString())
	assert.Equal(t, "ipmi", attrs(rf)[bmcotel.KeyDriver].AsString())
	kids = children[rf.SpanContext().SpanID()]
	require.Len(t, kids, 1, "the task that never started has no span")
	assert.Equal(t, codes.Error, kids[0].Status().Code)
	assert.Equal(t, "Unauthorized", attrs(kids[0])[bmcotel.KeyReason].AsString())

	// No credential anywhere in the spans.
	var all strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&all, "%s %v %v\n", s.Name(), s.Attributes(), s.Status())
	}
	assert.NotContains(t, all.String(), password)
	assert.NotContains(t, all.String(), "rotated-away")
}

func TestParentContext(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	ctx, parent := tp.Tracer("host").Start(context.Background(), "reconcile")
	tracing := bmcotel.New(bmcotel.Options{TracerProvider: tp, Parent: func(observe.JobEvent) context.Context { return ctx }})
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tracing.JobObserver().JobFinished(observe.JobEvent{
		Job: "j", Start: start, End: start.Add(time.Minute), Result: "Canceled", Reason: "Canceled",
		Tasks: []observe.TaskEvent{{Index: 0, Kind: "power", Start: start, Attempt: 1}},
	})
	parent.End()
	spans := sr.Ended()
	require.Len(t, spans, 3)
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	js := byName["bmckit.job"]
	assert.Equal(t, parent.SpanContext().SpanID(), js.Parent().SpanID())
	assert.Equal(t, codes.Unset, js.Status().Code, "canceled is not an error")
	ts := byName["bmckit.task power"]
	assert.Equal(t, js.SpanContext().SpanID(), ts.Parent().SpanID())
	assert.True(t, ts.EndTime().Equal(start.Add(time.Minute)), "an interrupted task ends with its job")
}
