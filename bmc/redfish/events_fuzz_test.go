package redfish

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

var sseSeeds = []string{
	": keep-alive\n\nid: 1\ndata: {\"Events\":[{\"OriginOfCondition\":{\"@odata.id\":\"/redfish/v1/Systems/1\"}}]}\n\n",
	"data: {\"Events\":[{\"OriginOfCondition\":\"/redfish/v1/Systems/1/\"},{\"OriginOfCondition\":{\"@odata.id\":\"https://bmc/redfish/v1/Chassis/1\"}}]}\r\n\r\n",
	"data: {\"Events\":\r\ndata: [{\"OriginOfCondition\":{\"@odata.id\":\"/redfish/v1/Systems/2\"}}]}\r\r",
	"event: message\nretry: 1000\ndata:{\"Events\":[]}\n\ndata: not json\n\n",
	"data: {\"Events\":[{\"OriginOfCondition\":{\"@odata.id\":\"/redfish/v1/Systems/1\"}}]}", // no blank line: not dispatched
}

// TestReadEvents: events are dispatched at blank lines with their origins;
// an event without its blank line at EOF is not.
func TestReadEvents(t *testing.T) {
	var got []string
	err := readEvents(strings.NewReader(strings.Join(sseSeeds, "")), func(o []string) { got = append(got, strings.Join(o, ",")) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/redfish/v1/Systems/1", "/redfish/v1/Systems/1,/redfish/v1/Chassis/1", "/redfish/v1/Systems/2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("origins %q; want %q", got, want)
	}
	// Read one byte at a time: the same events (a CR at a read's end waits for a possible LF).
	got = nil
	if err := readEvents(iotest.OneByteReader(strings.NewReader(strings.Join(sseSeeds, ""))), func(o []string) { got = append(got, strings.Join(o, ",")) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("byte by byte: origins %q; want %q", got, want)
	}
	// Limits.
	if err := readEvents(strings.NewReader(strings.Repeat("x", maxEventLine+1)+"\n"), func([]string) {}); err == nil {
		t.Fatal("a line over the limit was accepted")
	}
	big := strings.Repeat("data: "+strings.Repeat("y", 60000)+"\n", 20)
	if err := readEvents(strings.NewReader(big), func([]string) {}); err == nil {
		t.Fatal("an event over the limit was accepted")
	}
	// A read error is returned.
	boom := errors.New("boom")
	if err := readEvents(iotest.ErrReader(boom), func([]string) {}); !errors.Is(err, boom) {
		t.Fatalf("read error: %v; want boom", err)
	}
}

// FuzzReadEvents: the event stream is outside input. The decoder never
// panics, always ends, and reports only paths that it found in the input.
func FuzzReadEvents(f *testing.F) {
	for _, s := range sseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := readEvents(io.MultiReader(bytes.NewReader(b)), func(origins []string) {
			for _, o := range origins {
				if !strings.HasPrefix(o, "/") || strings.HasSuffix(o, "/") && o != "/" {
					t.Fatalf("origin %q is not a path without trailing slash", o)
				}
				if len(o) > len(b) {
					t.Fatalf("origin %q longer than the input", o)
				}
			}
		})
		if err != nil && !strings.Contains(err.Error(), "exceeds") {
			t.Fatalf("unexpected error from an in-memory stream: %v", err)
		}
	})
}
