package bootstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// DefaultMaxBodyBytes is the body-size limit of [Handler] unless
// [HandlerConfig.MaxBodyBytes] says otherwise.
const DefaultMaxBodyBytes = 4 << 10

// Limits on request fields.
const (
	// MaxAttemptIDLen is the longest attempt ID accepted, in bytes: room for
	// a Kubernetes object name (253) plus a generation and timestamp.
	MaxAttemptIDLen = 320
	// MaxMessageLen is the longest message a booted server may post, in bytes.
	MaxMessageLen = 256
)

// ErrBodyTooLarge is returned by [DecodeRequest] for a body over the limit.
var ErrBodyTooLarge = errors.New("request body too large")

// Request is the JSON body of POST /bootstate:
//
//	{"systemUUID": "4c4c4544-0042-4a10-8031-b2c04f4e4a31",
//	 "attemptID": "job-42-1", "token": "...", "signal": "BootStateReceived",
//	 "message": "flatcar 4081.2.0 up"}
//
// Only systemUUID is required when the tracker runs without tokens
// (the current attempt is then meant); with tokens, attemptID and token are
// required too. signal defaults to BootStateReceived and must be one of the
// tracker's callback signals.
type Request struct {
	SystemUUID string `json:"systemUUID"`
	AttemptID  string `json:"attemptID,omitempty"`
	Token      string `json:"token,omitempty"`
	Signal     string `json:"signal,omitempty"`
	Message    string `json:"message,omitempty"`
}

// DecodeRequest reads at most maxBytes from r and decodes one Request
// strictly: unknown fields, wrong types, trailing data and over-long fields
// are errors that name the field. The system UUID is returned lower-cased.
// The error never contains the token. A body over maxBytes yields an error
// wrapping [ErrBodyTooLarge].
func DecodeRequest(r io.Reader, maxBytes int64) (Request, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return Request{}, fmt.Errorf("read request body: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return Request{}, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, maxBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return Request{}, errors.New(`empty request body: want a JSON object such as {"systemUUID": "..."}`)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, describeJSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Request{}, errors.New("unexpected data after the JSON object")
	}
	if err := req.validate(); err != nil {
		return Request{}, err
	}
	return req, nil
}

// describeJSONError turns encoding/json errors into messages that name the
// field and never echo values (a mistyped token must not land in a log).
func describeJSONError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return fmt.Errorf("request body is a JSON %s, want an object", typeErr.Value)
		}
		return fmt.Errorf("field %q: got JSON %s, want %s", typeErr.Field, typeErr.Value, typeErr.Type)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: body ends in the middle of a value")
	default:
		// DisallowUnknownFields reports `json: unknown field "x"`; the name
		// is bounded by the body limit. Other messages carry no values.
		return fmt.Errorf("invalid request: %v", err)
	}
}

// validate checks field shapes (not authentication or existence).
func (req *Request) validate() error {
	if req.SystemUUID == "" {
		return errors.New(`field "systemUUID" is required`)
	}
	u, err := ParseSystemUUID(req.SystemUUID)
	if err != nil {
		return fmt.Errorf("field %q: %w", "systemUUID", err)
	}
	req.SystemUUID = u
	if req.AttemptID != "" {
		if err := ValidateAttemptID(req.AttemptID); err != nil {
			return fmt.Errorf("field %q: %w", "attemptID", err)
		}
	}
	if len(req.Token) > 128 {
		return fmt.Errorf("field %q: longer than 128 bytes", "token")
	}
	if req.Signal != "" {
		if err := ValidateSignal(req.Signal); err != nil {
			return fmt.Errorf("field %q: %w", "signal", err)
		}
	}
	if len(req.Message) > MaxMessageLen {
		return fmt.Errorf("field %q: %d bytes, at most %d allowed", "message", len(req.Message), MaxMessageLen)
	}
	if !utf8.ValidString(req.Message) || containsControl(req.Message) {
		return fmt.Errorf("field %q: want printable UTF-8 text", "message")
	}
	return nil
}

// ValidateAttemptID checks an attempt ID: 1 to [MaxAttemptIDLen] bytes of
// printable ASCII without spaces.
func ValidateAttemptID(id string) error {
	if id == "" {
		return errors.New("attempt ID is empty")
	}
	if len(id) > MaxAttemptIDLen {
		return fmt.Errorf("attempt ID %s: longer than %d bytes", quoteTrunc(id), MaxAttemptIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return fmt.Errorf("attempt ID %s: want printable ASCII without spaces", quoteTrunc(id))
		}
	}
	return nil
}

func containsControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}
