package job

import "context"

// Call identifies the job and task on whose behalf a BMC call is made. The
// Stepper puts it in the ctx of every call it makes to a bmc.Driver, so a
// driver, a tracing transport or a test BMC can attribute requests to jobs
// (see [CallFromContext]).
type Call struct {
	// Job is the job's Name.
	Job string
	// Task is the index of the task in Spec.Tasks.
	Task int
	// Attempt is the task's attempt number (1 for the first).
	Attempt int
}

type callKey struct{}

// WithCall returns a ctx that carries c.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFromContext returns the Call the Stepper put in ctx, if any.
func CallFromContext(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}
