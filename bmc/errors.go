package bmc

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// ErrNotSupported reports that the BMC (or driver) does not offer an action
// or capability. It is permanent.
var ErrNotSupported = errors.New("not supported by this BMC")

// ErrUnauthorized reports that the BMC rejected the credentials. It is
// permanent: retrying with the same credentials will not help.
var ErrUnauthorized = errors.New("the BMC rejected the credentials")

// ErrSessionExpired reports that the connection's BMC session is gone and
// the driver could not (or does not) log in again by itself. It is transient
// for the operation, but the connection is spent: the job runner closes it and
// dials again. Drivers that re-login transparently (the Redfish driver does)
// return it only when that failed too.
var ErrSessionExpired = errors.New("the BMC session expired")

// OpError is the error drivers return: what was attempted (Op), on which BMC
// (Endpoint, a URL without credentials), and why (Err).
type OpError struct {
	Op       string
	Endpoint string
	Err      error
}

func (e *OpError) Error() string {
	s := "bmc " + e.Op
	if e.Endpoint != "" {
		s += " on " + RedactURL(e.Endpoint) // never the query or user info
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Transient marks err as worth retrying (timeouts, 5xx, 503, resets, an
// expired session that could not be renewed yet). It returns nil for nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

// Permanent marks err as not worth retrying (4xx validation errors, refused
// actions). It returns nil for nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsTransient reports whether an operation that failed with err may succeed
// if retried. The classification, first match wins:
//
//   - ErrUnauthorized, ErrNotSupported, ErrFenced, context.Canceled:
//     permanent (a fenced request must not be retried by the caller; its
//     work is resumed under a valid lease).
//   - errors marked with [Transient] or [Permanent]: as marked (the innermost
//     marker nearest the top of the chain wins).
//   - context.DeadlineExceeded (a request timeout), net.Error timeouts,
//     connection refused/reset/aborted, broken pipe, unexpected EOF, and any
//     other *net.OpError: transient.
//   - anything else: permanent.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrNotSupported) || errors.Is(err, ErrFenced) || errors.Is(err, context.Canceled) {
		return false
	}
	for e := err; e != nil; {
		switch e.(type) {
		case *transientError:
			return true
		case *permanentError:
			return false
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	var t *transientError
	if errors.As(err, &t) {
		return true
	}
	var p *permanentError
	if errors.As(err, &p) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	for _, errno := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}
