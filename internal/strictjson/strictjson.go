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
	"reflect"
	"strings"
)

// ErrTrailingData reports input after the JSON value.
var ErrTrailingData = errors.New("trailing data after the JSON object")

// Decode decodes data into v strictly. Errors read "decoding JSON: ..." or
// wrap ErrTrailingData.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding JSON: %v", operatorError(err, data))
	}
	// dec.More reports false for a trailing '}' or ']', so look for EOF.
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}

// operatorError words encoding/json's type errors for the people who write
// specs: the field's JSON path and the JSON kind wanted, not a Go type name
// ("json: cannot unmarshal string into Go struct field Spec.tasks of type
// []task.Spec" becomes `field "tasks": want an array, got a string`).
func operatorError(err error, data []byte) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(data, se.Offset)
		return fmt.Errorf("line %d, column %d: %v", line, col, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := position(data, int64(len(data)))
		return fmt.Errorf("line %d, column %d: the input ends inside a value", line, col)
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil {
		if e := err.Error(); strings.HasPrefix(e, "json: unknown field ") {
			return fmt.Errorf("unknown field %s", strings.TrimPrefix(e, "json: unknown field "))
		}
		return err
	}
	want := "a value of another kind"
	switch te.Type.Kind() {
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	}
	got := te.Value
	switch got {
	case "object", "array", "string", "number":
		got = "a " + got
		if te.Value == "array" || te.Value == "object" {
			got = "an " + te.Value
		}
	}
	if te.Field == "" {
		return fmt.Errorf("want %s, got %s", want, got)
	}
	return fmt.Errorf("field %q: want %s, got %s", te.Field, want, got)
}

// position is the 1-based line and column (in bytes) of offset in data.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
