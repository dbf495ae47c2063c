package bmc

import "context"

// ReadScope marks a short span of calls on behalf of one caller (the job
// package opens one for every Step of a job): within it, a driver may
// answer a read that only prepares a call (SetPower's look at the current
// state, so it can send nothing when the server is already there) or a
// read of the boot override from the last read of the system it made in
// the same scope, provided it sent no action (no state-changing request)
// since. Outside a scope, or after an action, drivers read again.
//
// A scope never makes a driver skip the read that verifies an effect:
// [Driver.PowerState] always reads, since a caller polls it for a change
// that lands without any action of its own. Drivers that keep no such state
// ignore scopes; nothing else changes.
//
// The zero value is not used: call [WithReadScope].
type ReadScope struct {
	_ byte // a non-zero size, so that every scope has its own address
}

type readScopeKey struct{}

// WithReadScope returns a ctx that carries a new ReadScope: reads made
// under another scope (or under none) are not reused under this one.
func WithReadScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, readScopeKey{}, &ReadScope{})
}

// ReadScopeFrom returns the ReadScope in ctx, or nil.
func ReadScopeFrom(ctx context.Context) *ReadScope {
	s, _ := ctx.Value(readScopeKey{}).(*ReadScope)
	return s
}
