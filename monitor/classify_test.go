package monitor

// Internal tests: classify is unexported. Everything that goes through the
// Monitor's API is in the external package monitor_test, on the shared
// harness internal/monitortest.

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bmckit/bmckit/bmc"
)

func TestClassify(t *testing.T) {
	rf, _ := bmc.ParseEndpoint("redfish://10.0.0.1")
	ip, _ := bmc.ParseEndpoint("ipmi://10.0.0.2")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		ep     bmc.Endpoint
		err    error
		timed  bool
		reason string
	}{
		{rf, &bmc.OpError{Op: "login", Err: bmc.ErrUnauthorized}, false, ReasonUnauthorized},
		{rf, bmc.Transient(refused), false, ReasonUnreachable},
		{rf, &net.DNSError{Err: "no such host", Name: "bmc.example", IsNotFound: true}, false, ReasonUnreachable},
		{rf, bmc.Transient(timeout), false, ReasonTimeout},
		{rf, context.DeadlineExceeded, true, ReasonTimeout},
		{rf, bmc.Transient(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), false, ReasonUnreachable},
		{rf, bmc.Permanent(errors.New("x509: certificate signed by unknown authority")), false, ReasonBMCError},
		{rf, bmc.Transient(errors.New("503 Service Unavailable")), false, ReasonBMCError},
		{rf, &bmc.OpError{Op: "power state", Err: bmc.ErrNotSupported}, false, ReasonNotSupported},
		{ip, bmc.Transient(errors.New("no datagram matched")), false, ReasonUnreachable},
		{ip, context.DeadlineExceeded, true, ReasonUnreachable},
		{ip, bmc.Permanent(errors.New("completion code 0xc1")), false, ReasonBMCError},
	} {
		reason, msg := classify(c.ep, c.ep.String(), c.err, c.timed)
		assert.Equal(t, c.reason, reason, "%v", c.err)
		assert.Contains(t, msg, c.ep.String())
	}
}
