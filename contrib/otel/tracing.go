// Package otel records bmckit jobs as OpenTelemetry traces: one span per
// job with a child span per task. It lives in its own module
// (github.com/bmckit/bmckit/contrib/otel), so a program that does not import
// it never has OpenTelemetry in its module graph.
//
// # Use
//
//	tracing := otel.New(otel.Options{TracerProvider: tp})
//	runner, _ := job.NewRunner(job.Config{..., StepperConfig: job.StepperConfig{..., Observer: tracing.JobObserver()}})
//
// With the Prometheus adapter too, join the observers:
// observe.Join(metrics.JobObserver(), tracing.JobObserver()).
//
// # Spans
//
// When a job's completion is stored, the adapter records its span
// "bmckit.job", from the job's stored start to its completion, and under it
// one span "bmckit.task <kind>" (e.g. "bmckit.task power") per task that
// started, from the task's stored start to its stored result. The times are
// the ones in the job's status, so a job that a second runner resumed after
// a crash still gives one trace with every task, and nothing is held in
// memory while a job runs. The cost: a job's trace appears when the job
// ends, not while it runs (docs/observability.md has the alternatives).
//
// Attributes: bmckit.job.name, bmckit.job.generation, bmckit.system (the
// system key: host, port and system path, never credentials),
// bmckit.driver, bmckit.result and bmckit.reason on both; bmckit.task.index,
// bmckit.task.kind and bmckit.task.attempt on task spans; the wire counts
// (bmckit.wire.requests, bmckit.wire.logins) on the job span. A Failed job
// or task has status Error with its reason and message (status messages
// never hold secrets); Succeeded is Ok; Canceled is left Unset.
package otel

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job/observe"
)

// ScopeName is the instrumentation scope of the tracer.
const ScopeName = "github.com/bmckit/bmckit/contrib/otel"

// Options configures [New]. The zero value means the defaults.
type Options struct {
	// TracerProvider creates the tracer. Defaults to the global provider
	// (otel.GetTracerProvider()) at New.
	TracerProvider trace.TracerProvider
	// Parent, if set, returns the context whose span becomes a job span's
	// parent (e.g. to put jobs under a request's trace); it is called on
	// the goroutine that stored the completion and must be fast. Defaults
	// to none: each job is the root of its own trace.
	Parent func(e observe.JobEvent) context.Context
}

// Tracer turns job events into spans. Safe for concurrent use.
type Tracer struct {
	tracer trace.Tracer
	parent func(observe.JobEvent) context.Context
}

// New returns a Tracer.
func New(opts Options) *Tracer {
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Tracer{tracer: tp.Tracer(ScopeName), parent: opts.Parent}
}

// JobObserver returns the observer to set in job.Config.Observer or
// job.StepperConfig.Observer. Only JobFinished is set: the spans are
// recorded from the finished job's stored times.
func (t *Tracer) JobObserver() observe.Observer {
	return observe.Observer{JobFinished: t.record}
}

// Attribute keys.
const (
	KeyJobName    = attribute.Key("bmckit.job.name")
	KeyGeneration = attribute.Key("bmckit.job.generation")
	KeySystem     = attribute.Key("bmckit.system")
	KeyDriver     = attribute.Key("bmckit.driver")
	KeyResult     = attribute.Key("bmckit.result")
	KeyReason     = attribute.Key("bmckit.reason")
	KeyTaskIndex  = attribute.Key("bmckit.task.index")
	KeyTaskKind   = attribute.Key("bmckit.task.kind")
	KeyAttempt    = attribute.Key("bmckit.task.attempt")
	KeyRequests   = attribute.Key("bmckit.wire.requests")
	KeyLogins     = attribute.Key("bmckit.wire.logins")
)

func (t *Tracer) record(e observe.JobEvent) {
	ctx := context.Background()
	if t.parent != nil {
		if p := t.parent(e); p != nil {
			ctx = p
		}
	}
	common := []attribute.KeyValue{KeyJobName.String(e.Job), KeySystem.String(e.System), KeyDriver.String(e.Driver)}
	jobAttrs := append(append([]attribute.KeyValue(nil), common...),
		KeyGeneration.Int64(e.Generation), KeyResult.String(string(e.Result)), KeyReason.String(e.Reason),
		KeyRequests.Int64(e.Wire.Requests), KeyLogins.Int64(e.Wire.Logins))
	ctx, span := t.tracer.Start(ctx, "bmckit.job",
		trace.WithTimestamp(e.Start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(jobAttrs...))
	for _, ts := range e.Tasks {
		if ts.Start.IsZero() {
			continue // never started: no span
		}
		attrs := append(append([]attribute.KeyValue(nil), common...),
			KeyTaskIndex.Int(ts.Index), KeyTaskKind.String(ts.Kind), KeyAttempt.Int(ts.Attempt),
			KeyResult.String(string(ts.Result)), KeyReason.String(ts.Reason))
		_, ss := t.tracer.Start(ctx, "bmckit.task "+ts.Kind, trace.WithTimestamp(ts.Start), trace.WithAttributes(attrs...))
		setStatus(ss, ts.Result, ts.Reason, ts.Message)
		end := ts.End
		if end.IsZero() {
			end = e.End
		}
		ss.End(trace.WithTimestamp(end))
	}
	setStatus(span, e.Result, e.Reason, e.Message)
	span.End(trace.WithTimestamp(e.End))
}

func setStatus(s trace.Span, r conditions.Result, reason, msg string) {
	switch r {
	case conditions.ResultSucceeded:
		s.SetStatus(codes.Ok, "")
	case conditions.ResultFailed:
		s.SetStatus(codes.Error, reason+": "+msg)
	}
}
