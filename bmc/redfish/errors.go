package redfish

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/stmcginnis/gofish/schemas"

	"github.com/bmckit/bmckit/bmc"
)

// ErrOverrideNotApplied reports that the BMC accepted a boot override but
// reading it back shows it ignored or already reverted it.
var ErrOverrideNotApplied = errors.New("the BMC accepted the boot override but did not apply it")

// StatusError is a Redfish error answer: the HTTP status and the first
// message of the Redfish error body.
type StatusError struct {
	StatusCode int
	// MessageID is the Redfish MessageId (or error code), e.g.
	// "Base.1.8.ActionNotSupported"; empty when the body had none.
	MessageID string
	// Message is the BMC's human readable message, shortened.
	Message string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.MessageID != "" {
		s += ": " + e.MessageID
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// refused reports whether the BMC refused an action as unsupported (501,
// 405, or a 400 naming an unsupported action or value).
func (e *StatusError) refused() bool {
	switch e.StatusCode {
	case http.StatusNotImplemented, http.StatusMethodNotAllowed:
		return true
	case http.StatusBadRequest:
		id := e.MessageID + " " + e.Message
		return strings.Contains(id, "NotSupported") || strings.Contains(id, "NotInList")
	}
	return false
}

// statusErrorFrom converts gofish's error for a non-2xx answer.
func statusErrorFrom(ge *schemas.Error) *StatusError {
	se := &StatusError{StatusCode: ge.HTTPReturnedStatusCode, MessageID: ge.Code, Message: ge.Message}
	for _, x := range ge.ExtendedInfos {
		if x.MessageID != "" {
			se.MessageID = x.MessageID
		}
		if x.Message != "" {
			se.Message = x.Message
		}
		break
	}
	se.Message = shorten(se.Message)
	return se
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// classify wraps err so that bmc.IsTransient and errors.Is(bmc.ErrUnauthorized)
// answer correctly:
//
//   - 401/403: ErrUnauthorized (permanent)
//   - 408, 429, 5xx except 501: transient
//   - other 4xx and 501: permanent
//   - TLS certificate failures: permanent (retrying will not fix them)
//   - other transport failures (reset, refused, EOF, timeout): transient
func classify(err error) error {
	if err == nil {
		return nil
	}
	var ge *schemas.Error
	if errors.As(err, &ge) && ge.HTTPReturnedStatusCode != 0 {
		se := statusErrorFrom(ge)
		switch c := se.StatusCode; {
		case c == http.StatusUnauthorized || c == http.StatusForbidden:
			return fmt.Errorf("%w (%w)", bmc.ErrUnauthorized, se)
		case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || (c >= 500 && c != http.StatusNotImplemented):
			return bmc.Transient(se)
		default:
			return bmc.Permanent(se)
		}
	}
	var se *StatusError
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, bmc.ErrFenced) {
		return err
	}
	var (
		unknownCA *x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return bmc.Permanent(fmt.Errorf("TLS certificate not trusted (set Options.CACertPEM, or InsecureSkipVerify for self-signed BMCs): %w", err))
	}
	var tlsRecord tls.RecordHeaderError
	if errors.As(err, &tlsRecord) {
		return bmc.Permanent(fmt.Errorf("the BMC does not speak TLS on this port (use redfish+http:// for plain HTTP): %w", err))
	}
	// Anything else the HTTP client reports (reset, refused, EOF, broken
	// connection) is a transport failure: transient.
	var ue *url.Error
	if errors.As(err, &ue) || bmc.IsTransient(err) {
		return bmc.Transient(err)
	}
	return err
}
