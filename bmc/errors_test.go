package bmc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bmckit/bmckit/bmc"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

type notTimeoutNetErr struct{}

func (notTimeoutNetErr) Error() string   { return "net thing" }
func (notTimeoutNetErr) Timeout() bool   { return false }
func (notTimeoutNetErr) Temporary() bool { return false }

func TestIsTransient(t *testing.T) {
	plain := errors.New("HTTP 400: bad request")
	op := func(err error) error { return &bmc.OpError{Op: "set power", Endpoint: "redfish://10.0.0.5", Err: err} }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", plain, false},
		{"plain wrapped", fmt.Errorf("x: %w", plain), false},
		{"plain in OpError", op(plain), false},
		{"ErrUnauthorized", bmc.ErrUnauthorized, false},
		{"ErrUnauthorized marked transient", bmc.Transient(bmc.ErrUnauthorized), false},
		{"ErrUnauthorized in OpError marked transient", bmc.Transient(op(bmc.ErrUnauthorized)), false},
		{"ErrNotSupported marked transient", bmc.Transient(fmt.Errorf("boot: %w", bmc.ErrNotSupported)), false},
		{"context.Canceled", context.Canceled, false},
		{"context.Canceled marked transient", bmc.Transient(context.Canceled), false},
		{"Transient", bmc.Transient(plain), true},
		{"Transient wrapped in OpError", op(bmc.Transient(plain)), true},
		{"Transient wrapped twice", fmt.Errorf("a: %w", op(bmc.Transient(plain))), true},
		{"Permanent", bmc.Permanent(plain), false},
		{"Permanent over a timeout", bmc.Permanent(context.DeadlineExceeded), false},
		{"Permanent over ECONNREFUSED", op(bmc.Permanent(syscall.ECONNREFUSED)), false},
		{"outer Transient over inner Permanent", bmc.Transient(fmt.Errorf("x: %w", bmc.Permanent(plain))), true},
		{"outer Permanent over inner Transient", bmc.Permanent(fmt.Errorf("x: %w", bmc.Transient(plain))), false},
		{"Transient inside errors.Join", errors.Join(plain, bmc.Transient(plain)), true},
		{"DeadlineExceeded", context.DeadlineExceeded, true},
		{"DeadlineExceeded in OpError", op(fmt.Errorf("get: %w", context.DeadlineExceeded)), true},
		{"ECONNREFUSED", op(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), true},
		{"ECONNREFUSED bare", syscall.ECONNREFUSED, true},
		{"ECONNRESET", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"EPIPE", syscall.EPIPE, true},
		{"EHOSTUNREACH", syscall.EHOSTUNREACH, true},
		{"io.EOF", op(io.EOF), true},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, true},
		{"net timeout", op(timeoutErr{}), true},
		{"net non-timeout error", notTimeoutNetErr{}, false},
		{"net.OpError", &net.OpError{Op: "read", Net: "udp", Err: plain}, true},
		{"DNS error", &net.DNSError{Err: "no such host", Name: "bmc.invalid", IsNotFound: true}, false},
		{"DNS timeout", &net.DNSError{Err: "timeout", Name: "bmc.invalid", IsTimeout: true}, true},
		{"Transient(nil)", bmc.Transient(nil), false},
		{"Permanent(nil)", bmc.Permanent(nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, bmc.IsTransient(tt.err), "%v", tt.err)
		})
	}
}

// A real refused connection on loopback classifies as transient.
func TestIsTransientRealConnRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, err = net.Dial("tcp", addr)
	if err == nil {
		t.Skip("port was reused before dialing")
	}
	assert.True(t, bmc.IsTransient(err), "%v", err)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "%v", err)
}

func TestMarkersKeepTheMessageAndChain(t *testing.T) {
	base := errors.New("HTTP 503")
	tr := bmc.Transient(base)
	pe := bmc.Permanent(base)
	assert.Equal(t, "HTTP 503", tr.Error())
	assert.Equal(t, "HTTP 503", pe.Error())
	assert.ErrorIs(t, tr, base)
	assert.ErrorIs(t, pe, base)
	assert.NoError(t, bmc.Transient(nil))
	assert.NoError(t, bmc.Permanent(nil))
}

func TestOpError(t *testing.T) {
	cause := fmt.Errorf("HTTP 401: %w", bmc.ErrUnauthorized)
	e := &bmc.OpError{Op: "set power", Endpoint: "redfish://10.0.0.5", Err: cause}
	assert.Equal(t, "bmc set power on redfish://10.0.0.5: HTTP 401: the BMC rejected the credentials", e.Error())
	assert.Same(t, cause, errors.Unwrap(e))
	assert.ErrorIs(t, e, bmc.ErrUnauthorized)
	var got *bmc.OpError
	assert.True(t, errors.As(fmt.Errorf("job: %w", e), &got))
	assert.Equal(t, "set power", got.Op)

	assert.Equal(t, "bmc dial", (&bmc.OpError{Op: "dial"}).Error())
	assert.Equal(t, "bmc dial on ipmi://h", (&bmc.OpError{Op: "dial", Endpoint: "ipmi://h"}).Error())
	assert.Nil(t, (&bmc.OpError{Op: "dial"}).Unwrap())
}
