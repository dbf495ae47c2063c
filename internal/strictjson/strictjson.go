// Package strictjson decodes one JSON value strictly: unknown fields are
// errors, and nothing but whitespace may follow the value. It is the shared
// decoder of every spec bmckit accepts from outside (tasks, jobs).
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrTrailingData reports input after the JSON value.
var ErrTrailingData = errors.New("trailing data after the JSON object")

// Decode decodes data into v strictly. Errors read "decoding JSON: ..." or
// wrap ErrTrailingData.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding JSON: %v", err)
	}
	// dec.More reports false for a trailing '}' or ']', so look for EOF.
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}
