package bmc

import (
	"context"
	"errors"
)

// ErrFenced reports that a request was not sent because the caller's right
// to act on the system (its lease or lock) may have lapsed. Nothing was
// written to the BMC: whatever the caller was doing can be resumed, by it or
// by whoever holds the system now. It is neither transient nor permanent for
// the BMC: the job package stops the step without recording a BMC error.
var ErrFenced = errors.New("request not sent: the caller's lease on the system may have lapsed (fenced)")

// Fence decides whether requests may still be sent on behalf of a caller.
// The job package puts one in the ctx of every call it makes while it holds
// a system (a Runner's lease, a [job.SystemLocker]'s lock); drivers ask it
// through [Admit] immediately before each request is written, so a process
// that was paused anywhere before that point (a GC pause, a VM migration,
// SIGSTOP, a frozen container) sends nothing once it resumes with its lease
// lapsed, whether or not anything else has noticed yet.
type Fence interface {
	// Admit returns nil if a request may be written now, or an error
	// wrapping ErrFenced. It is called from any goroutine, immediately
	// before each request; it must be cheap, must not block and must be
	// safe for concurrent use.
	Admit() error
}

type fenceKey struct{}

// WithFence returns a ctx that carries f; every request a driver makes
// under it is admitted by f first. A fence already in ctx is replaced.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFrom returns the Fence in ctx, or nil.
func FenceFrom(ctx context.Context) Fence {
	f, _ := ctx.Value(fenceKey{}).(Fence)
	return f
}

// Admit asks the Fence in ctx (see [WithFence]) whether a request may be
// written now: nil when it may or when ctx carries no fence, otherwise an
// error wrapping ErrFenced. Every driver calls it immediately before it
// writes each request (the Redfish driver in its HTTP transport, the IPMI
// driver before each datagram exchange, bmclib before each ipmitool run, the
// fake before each call); a driver of your own must do the same, and must
// return the error (wrapped with %w) without sending anything.
func Admit(ctx context.Context) error {
	if f, ok := ctx.Value(fenceKey{}).(Fence); ok {
		return f.Admit()
	}
	return nil
}
