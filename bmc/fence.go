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
// a system (a Runner's lease, a [syslock.Locker]'s lock); drivers ask it
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

// SendHook is told about every request written under a ctx that carries it
// ([WithSendHook]), through [Admit], immediately before the request is
// written and after the ctx's Fence (if any) admitted it. Package stagger
// puts one on each power request it grants a slot to: the slot is held open
// for a bounded time, and a request that would leave after that is not sent
// (docs/stagger.md).
type SendHook interface {
	// Sending is called immediately before a request is written. A non-nil
	// error stops the request: nothing is written, and the driver returns
	// the error wrapped with %w (mark it [Transient] or [Permanent] as the
	// caller should treat it). Called from any goroutine; it must be cheap,
	// must not block and must be safe for concurrent use.
	Sending() error
}

type sendHookKey struct{}

// WithSendHook returns a ctx that carries h; every request a driver makes
// under it is shown to h first (after the Fence). A hook already in ctx is
// replaced.
func WithSendHook(ctx context.Context, h SendHook) context.Context {
	return context.WithValue(ctx, sendHookKey{}, h)
}

// SendHookFrom returns the SendHook in ctx, or nil: a hook of your own can
// wrap it, calling it first.
func SendHookFrom(ctx context.Context) SendHook {
	h, _ := ctx.Value(sendHookKey{}).(SendHook)
	return h
}

// Admit asks the Fence in ctx (see [WithFence]) whether a request may be
// written now, then tells the SendHook in ctx (see [WithSendHook]) that it
// is being written: nil when it may, or when ctx carries neither; otherwise
// the Fence's error (wrapping ErrFenced) or the hook's. Every driver calls
// it immediately before it writes each request (the Redfish driver in its
// HTTP transport, the IPMI driver before each datagram exchange, bmclib
// before each ipmitool run, the fake before each call); a driver of your own
// must do the same, and must return the error (wrapped with %w) without
// sending anything.
func Admit(ctx context.Context) error {
	if f, ok := ctx.Value(fenceKey{}).(Fence); ok {
		if err := f.Admit(); err != nil {
			return err
		}
	}
	if h, ok := ctx.Value(sendHookKey{}).(SendHook); ok {
		return h.Sending()
	}
	return nil
}
