package strictjson_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/internal/strictjson"
)

func TestCheckNamesTheLimitAndPath(t *testing.T) {
	lim := strictjson.Limits{Bytes: 1 << 20, String: 16, Array: 3, Depth: 4}
	cases := []struct{ in, want string }{
		{`{"tasks":[{},{},{},{}]}`, "tasks: more than 3 elements (at most 3)"},
		{`{"tasks":[{"a":[1,2,3,4]}]}`, "tasks[0].a: more than 3 elements"},
		{`{"ref":"` + strings.Repeat("x", 17) + `"}`, "ref: a string of 17 bytes (at most 16)"},
		{`{"` + strings.Repeat("k", 17) + `":1}`, "a key of 17 bytes (at most 16)"},
		{`{"a":{"b":{"c":{"d":{}}}}}`, "a.b.c.d: nested deeper than 4 levels"},
		{`[[1],[2],[3],[4]]`, "the document: more than 3 elements"},
		{strings.Repeat(" ", 1<<20+1), "1.0 MiB, at most 1 MiB"},
	}
	for _, c := range cases {
		err := strictjson.Check([]byte(c.in), lim)
		if !errors.Is(err, strictjson.ErrTooLarge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%.40q) = %v, want ErrTooLarge containing %q", c.in, err, c.want)
		}
	}
	for _, ok := range []string{`{"tasks":[{},{},{}]}`, `{"a":"0123456789abcdef"}`, `{"a":{"b":{"c":{}}}}`, `{"broken":`} {
		if err := strictjson.Check([]byte(ok), lim); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
}

func TestReadAllRefusesWithTheLimit(t *testing.T) {
	data, err := strictjson.ReadAll(strings.NewReader(strings.Repeat("x", 10)), 10)
	if err != nil || len(data) != 10 {
		t.Fatalf("at the limit: %d bytes, %v", len(data), err)
	}
	_, err = strictjson.ReadAll(strings.NewReader(strings.Repeat("x", 11)), 10)
	if !errors.Is(err, strictjson.ErrTooLarge) || !strings.Contains(err.Error(), "larger than the limit of 10 bytes") {
		t.Fatalf("over the limit: %v", err)
	}
}

func TestDecodeWordsTypeErrorsForOperators(t *testing.T) {
	var v struct {
		Tasks []struct{ Op string } `json:"tasks"`
		N     int                   `json:"n"`
	}
	for in, want := range map[string]string{
		`{"tasks":"x"}`:        `field "tasks": want an array, got a string`,
		`{"n":"x"}`:            `field "n": want an integer, got a string`,
		`{"tasks":[{"Op":1}]}`: `field "tasks.Op": want a string, got a number`,
		`{"nope":1}`:           `unknown field "nope"`,
		`[]`:                   `want an object, got an array`,
	} {
		err := strictjson.Decode([]byte(in), &v)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("Decode(%s) = %v, want %q and no Go type names", in, err, want)
		}
	}
}

// FuzzCheck: Check never panics, and whatever it accepts within the limits
// stays within them for the decoder (an accepted input is at most Bytes).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"tasks":[{},{}]}`, `[[[[]]]]`, `{"a":"b"}`, `{"a":`, `"x"`, `[1,2,3,4,5]`, `{"a":[{"b":[1]}]}`} {
		f.Add([]byte(s))
	}
	lim := strictjson.Limits{Bytes: 4096, String: 8, Array: 4, Depth: 3}
	f.Fuzz(func(t *testing.T, in []byte) {
		err := strictjson.Check(in, lim)
		if err == nil && len(in) > lim.Bytes {
			t.Fatalf("accepted %d bytes", len(in))
		}
		if err != nil && !errors.Is(err, strictjson.ErrTooLarge) {
			t.Fatalf("error %v does not wrap ErrTooLarge", err)
		}
		if err != nil && bytes.Count(in, []byte("\n")) == 0 && !strings.Contains(err.Error(), "at most") && !strings.Contains(err.Error(), "deeper") {
			t.Fatalf("error %v names no limit", err)
		}
	})
}
