package bmcevents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bmckit/bmckit/bmc"
)

// Limits of the decoder: a BMC's push is outside input.
const (
	// DefaultMaxBodyBytes bounds a pushed body unless
	// [Config.MaxBodyBytes] says otherwise: 64 KiB, far above a Redfish
	// Event of a few records.
	DefaultMaxBodyBytes = 64 << 10
	// MaxRecords is the most event records one payload may carry.
	MaxRecords = 64
	// maxText bounds every string but the message, in bytes.
	maxText = 256
)

// ErrBodyTooLarge is returned by [DecodePayload] for a body over the limit.
var ErrBodyTooLarge = errors.New("event body too large")

// Payload is a decoded Redfish Event: the body a BMC posts to a
// subscription's destination.
type Payload struct {
	// ID is the payload's Id ("" when absent).
	ID string
	// Context is the subscription's Context the BMC sent back.
	Context string
	// Records are the event records, in the BMC's order.
	Records []Record
}

// Record is one event record of a payload (Redfish EventRecord). Strings
// are bounded and valid UTF-8; what the BMC left out is "".
type Record struct {
	// EventID is the record's EventId; "" when absent.
	EventID string
	// EventType is Alert, StatusChange, ResourceUpdated, ... (deprecated
	// in Redfish, still sent by most BMCs).
	EventType string
	// Severity is MessageSeverity, else the older Severity, as the BMC
	// wrote it.
	Severity string
	// Message and MessageID as the BMC wrote them.
	Message   string
	MessageID string
	// Origin is OriginOfCondition's path ("/redfish/v1/Systems/1"),
	// whether sent as a link object or, in older schemas, as a string.
	Origin string
	// Timestamp is EventTimestamp as sent; Time is it parsed (zero when
	// absent or unparseable).
	Timestamp string
	Time      time.Time
}

// text is a JSON string, number or null, kept as a string: BMCs send
// EventId as either.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*t = ""
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = text(s)
		return nil
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		*t = text(n.String())
		return nil
	}
	return errors.New("want a string or a number")
}

// origin is OriginOfCondition: {"@odata.id": "..."} or a plain string.
type origin string

func (o *origin) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var link struct {
			ID text `json:"@odata.id"`
		}
		if err := json.Unmarshal(b, &link); err != nil {
			return err
		}
		*o = origin(link.ID)
		return nil
	}
	var t text
	if err := t.UnmarshalJSON(b); err != nil {
		return err
	}
	*o = origin(t)
	return nil
}

type wireRecord struct {
	EventID         text   `json:"EventId"`
	EventType       text   `json:"EventType"`
	MessageSeverity text   `json:"MessageSeverity"`
	Severity        text   `json:"Severity"`
	Message         text   `json:"Message"`
	MessageID       text   `json:"MessageId"`
	Origin          origin `json:"OriginOfCondition"`
	EventTimestamp  text   `json:"EventTimestamp"`
}

type wirePayload struct {
	ID      text              `json:"Id"`
	Context text              `json:"Context"`
	Events  []json.RawMessage `json:"Events"`
}

// DecodePayload reads at most maxBytes (DefaultMaxBodyBytes when <= 0)
// from r and decodes one Redfish Event. It is strict about the shape
// (one JSON object, an Events array of 1 to MaxRecords objects, known
// properties of the right JSON type) and tolerant of everything BMCs add
// (unknown properties, Oem, MessageArgs, EventId as a number,
// OriginOfCondition as a string, Severity instead of MessageSeverity).
// Strings are cut to their bounds and made valid UTF-8. A body over the
// limit fails with an error wrapping [ErrBodyTooLarge]. Errors name the
// property, never a value.
func DecodePayload(r io.Reader, maxBytes int64) (Payload, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return Payload{}, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, maxBytes)
		}
		return Payload{}, fmt.Errorf("read event body: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return Payload{}, fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, maxBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return Payload{}, errors.New(`empty event body: want a Redfish Event, {"Events": [...]}`)
	}
	var w wirePayload
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&w); err != nil {
		return Payload{}, describeJSONError("event", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Payload{}, errors.New("unexpected data after the event's JSON object")
	}
	if len(w.Events) == 0 {
		return Payload{}, errors.New(`property "Events": want an array of 1 or more event records`)
	}
	if len(w.Events) > MaxRecords {
		return Payload{}, fmt.Errorf(`property "Events": %d records, at most %d allowed`, len(w.Events), MaxRecords)
	}
	p := Payload{ID: clip(string(w.ID), maxText), Context: clip(string(w.Context), maxText)}
	for i, raw := range w.Events {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] != '{' {
			return Payload{}, fmt.Errorf(`property "Events[%d]": want an object`, i)
		}
		var wr wireRecord
		if err := json.Unmarshal(raw, &wr); err != nil {
			return Payload{}, describeJSONError(fmt.Sprintf("Events[%d]", i), err)
		}
		sev := wr.MessageSeverity
		if sev == "" {
			sev = wr.Severity
		}
		rec := Record{
			EventID:   clip(string(wr.EventID), maxText),
			EventType: clip(string(wr.EventType), maxText),
			Severity:  clip(string(sev), maxText),
			Message:   clip(string(wr.Message), bmc.MaxLogMessage),
			MessageID: clip(string(wr.MessageID), maxText),
			Origin:    clip(strings.TrimSuffix(pathOf(string(wr.Origin)), "/"), maxText),
			Timestamp: clip(string(wr.EventTimestamp), maxText),
		}
		rec.Time = parseTime(rec.Timestamp)
		p.Records = append(p.Records, rec)
	}
	return p, nil
}

// describeJSONError names the property and the JSON type, never a value.
func describeJSONError(where string, err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return fmt.Errorf("%s: got JSON %s, want an object", where, typeErr.Value)
		}
		return fmt.Errorf("%s property %q: got JSON %s", where, typeErr.Field, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("%s: malformed JSON at byte %d", where, syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%s: malformed JSON: the body ends in the middle of a value", where)
	}
	return fmt.Errorf("%s: a property has the wrong JSON type (want a string or a number)", where)
}

// pathOf is the path of a URI: OriginOfCondition may be absolute.
func pathOf(uri string) string {
	if i := strings.Index(uri, "://"); i >= 0 {
		rest := uri[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return rest[j:]
		}
		return "/"
	}
	return uri
}

// parseTime parses an EventTimestamp: RFC 3339 with or without fractions,
// and the offset-less form some BMCs write (taken as UTC).
func parseTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04:05Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// clip makes s valid UTF-8 without control characters and cuts it to at
// most n bytes at a rune boundary.
func clip(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		s = strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, s)
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// systemOf is the system ID of an origin under /redfish/v1/Systems/{id}
// ("" for a chassis, a manager, the service).
func systemOf(origin string) string {
	const p = "/redfish/v1/systems/"
	if len(origin) <= len(p) || !strings.EqualFold(origin[:len(p)], p) {
		return ""
	}
	id, _, _ := strings.Cut(origin[len(p):], "/")
	return id
}
