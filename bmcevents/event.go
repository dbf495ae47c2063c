package bmcevents

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Prefix is where events live in the Store: one record per event under
// Prefix + source + "/" + event key (see [EventKey]).
const Prefix = "bmcevents/"

// Event is one stored event: plain JSON, readable by any tool.
type Event struct {
	// Source is the host's name of the BMC that pushed it (the name given
	// to [Manager.Ensure] and [Destination]).
	Source string `json:"source"`
	// ID is the record's EventId as the BMC sent it ("" when it sent none).
	ID string `json:"id,omitempty"`
	// Type is the record's EventType (Alert, StatusChange, ...).
	Type string `json:"type,omitempty"`
	// Severity is the record's severity, mapped by bmc.ParseSeverity; the
	// host raises conditions and metrics on SeverityCritical.
	Severity bmc.Severity `json:"severity,omitempty"`
	// Message and MessageID as the BMC sent them (bounded).
	Message   string `json:"message,omitempty"`
	MessageID string `json:"messageID,omitempty"`
	// Origin is the path of the resource the event is about
	// (OriginOfCondition), e.g. "/redfish/v1/Systems/1".
	Origin string `json:"origin,omitempty"`
	// System is the ID of the system Origin lies under ("1" for
	// /redfish/v1/Systems/1/...), "" for an event about the chassis, the
	// manager or the BMC as a whole.
	System string `json:"system,omitempty"`
	// Time is EventTimestamp, in UTC; zero when the BMC gave none.
	Time time.Time `json:"time,omitempty"`
	// Received is when the receiver stored it (its clock).
	Received time.Time `json:"received"`
	// Via is how the event reached the Store: pushed (KindPush), read
	// from the BMC's stream (KindSSE) or from its log (KindPoll). A pushed
	// and a streamed copy of one event are one record: Via is the copy
	// stored first. "" in records written before it existed (push).
	Via Kind `json:"via,omitempty"`
	// Log is the log a polled event was read from ("system/SEL"); "" for
	// pushed and streamed events.
	Log string `json:"log,omitempty"`
}

// Critical reports whether the BMC rates the event Critical.
func (e Event) Critical() bool { return e.Severity == bmc.SeverityCritical }

// DecodeEvent decodes a stored event's value.
func DecodeEvent(value []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(value, &e); err != nil {
		return Event{}, fmt.Errorf("decode stored BMC event: %w", err)
	}
	return e, nil
}

// EventKey is the store key of record i of payload p pushed by source:
// Prefix + source + "/" + a name for the event that a retry of the same
// push reproduces exactly. It is the record's EventId (its safe characters,
// at most 48) followed by 16 hex digits of a SHA-256 over the EventId, the
// timestamp, the message ID, the origin and, when the record has no
// EventId, the payload's Id, the record's index and its message. The hash
// tells apart two events with one EventId (a BMC whose counter restarted
// after a reboot); a retry, which re-sends the same record, lands on the
// same key and is dropped as a duplicate.
func EventKey(source string, p Payload, i int) string {
	r := p.Records[i]
	h := sha256.New()
	for _, s := range []string{r.EventID, r.Timestamp, r.MessageID, r.Origin} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if r.EventID == "" {
		for _, s := range []string{p.ID, strconv.Itoa(i), r.Message, r.Severity, r.EventType} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
	}
	name := safeName(r.EventID, 48)
	if name == "" {
		name = "_"
	}
	return Prefix + source + "/" + name + "-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// safeName keeps the characters of s that are safe in a key, at most n.
func safeName(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < n; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// MaxSourceLen bounds a source name.
const MaxSourceLen = 128

// ValidateSource checks a source name (the host's name of a BMC, part of
// store keys and destination paths): 1 to MaxSourceLen bytes of letters,
// digits, '.', '_' and '-', not starting with '.'.
func ValidateSource(source string) error {
	if source == "" || len(source) > MaxSourceLen || source[0] == '.' || safeName(source, MaxSourceLen) != source {
		return fmt.Errorf("BMC event source %s: want 1 to %d letters, digits, '.', '_' or '-', not starting with '.'", bmc.QuoteBounded(source), MaxSourceLen)
	}
	return nil
}

// ErrShortSecret: a secret shorter than MinSecretLen.
var ErrShortSecret = errors.New("bmcevents: the secret must be at least 16 bytes")

// MinSecretLen is the shortest secret accepted.
const MinSecretLen = 16

// token is source's credential in its destination path:
// HMAC-SHA256(secret, "bmcevents/v1\x00" + source), base64url without
// padding. Derived, never stored: the receiver recomputes it.
func token(secret []byte, source string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("bmcevents/v1\x00"))
	m.Write([]byte(source))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkToken compares got with the token of every secret in constant time
// (per secret).
func checkToken(secrets [][]byte, source, got string) bool {
	ok := false
	for _, s := range secrets {
		if hmac.Equal([]byte(token(s, source)), []byte(got)) {
			ok = true
		}
	}
	return ok
}

func validSecrets(secret []byte, previous [][]byte) ([][]byte, error) {
	if len(secret) < MinSecretLen {
		return nil, ErrShortSecret
	}
	out := [][]byte{append([]byte(nil), secret...)}
	for _, p := range previous {
		if len(p) < MinSecretLen {
			return nil, fmt.Errorf("PreviousSecrets: %w", ErrShortSecret)
		}
		out = append(out, append([]byte(nil), p...))
	}
	return out, nil
}
