package monitor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/bmckit/bmckit/bmc"
)

// maxMessage bounds a condition message (BMC error texts can be long).
const maxMessage = 1024

// classify maps a failed read to a Contactable reason and a message naming
// the BMC. readTimedOut is true when the read's own deadline
// (Config.ReadTimeout) passed.
func classify(ep bmc.Endpoint, bmcURL string, err error, readTimedOut bool) (reason, message string) {
	var (
		dnsErr    *net.DNSError
		netOp     *net.OpError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		netErr    net.Error
	)
	udp := ep.Protocol == "ipmi" // no connection: silence is the only sign of a dead BMC
	switch {
	case errors.Is(err, bmc.ErrUnauthorized):
		return ReasonUnauthorized, bmcURL + " refused the credentials: " + err.Error()
	case errors.Is(err, bmc.ErrNotSupported):
		return ReasonNotSupported, bmcURL + " cannot report the power state: " + err.Error()
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &verify), errors.As(err, &record), errors.As(err, &alert):
		return ReasonTLSError, "TLS with " + bmcURL + " failed: " + err.Error()
	case errors.As(err, &dnsErr),
		errors.As(err, &netOp) && netOp.Op == "dial",
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTDOWN):
		return ReasonUnreachable, bmcURL + " is unreachable: " + err.Error()
	case udp && (readTimedOut || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout() || bmc.IsTransient(err)):
		return ReasonUnreachable, bmcURL + " did not answer: " + err.Error()
	case readTimedOut || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout, bmcURL + " did not answer in time: " + err.Error()
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &netOp):
		return ReasonUnreachable, bmcURL + " dropped the connection: " + err.Error()
	}
	return ReasonBMCError, bmcURL + " answered with an error: " + err.Error()
}

// scrub removes password from s (defence in depth: drivers and resolvers
// must never put it in an error) and bounds its length.
func scrub(s, password string) string {
	if password != "" && strings.Contains(s, password) {
		s = strings.ReplaceAll(s, password, "<redacted>")
	}
	if len(s) > maxMessage {
		s = s[:maxMessage-3] + "..."
	}
	return s
}

// scrubbed is err with its text scrubbed of password (see scrub); errors.Is
// and errors.As still see err.
func scrubbed(err error, password string) error {
	if password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return &scrubbedError{msg: scrub(err.Error(), password), err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
