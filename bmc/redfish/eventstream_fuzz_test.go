package redfish

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzReadSSE: the data readSSE hands on is what the stream carried,
// whatever the chunking: the same events from one read and from one byte
// at a time, none over the limit, and an error from fn ends the read with
// that error.
func FuzzReadSSE(f *testing.F) {
	for _, s := range sseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var whole, bytewise []string
		errWhole := readSSE(bytes.NewReader(b), func(d []byte) error {
			if len(d) > maxEventData {
				t.Fatalf("event of %d bytes, over the limit", len(d))
			}
			whole = append(whole, string(d))
			return nil
		})
		errByte := readSSE(iotest.OneByteReader(bytes.NewReader(b)), func(d []byte) error {
			bytewise = append(bytewise, string(d))
			return nil
		})
		if (errWhole == nil) != (errByte == nil) || strings.Join(whole, "\x00") != strings.Join(bytewise, "\x00") || len(whole) != len(bytewise) {
			t.Fatalf("chunking changed the events: %q (%v) vs %q (%v)", whole, errWhole, bytewise, errByte)
		}
		if len(whole) > 0 {
			stop := errors.New("stop")
			n := 0
			if err := readSSE(bytes.NewReader(b), func([]byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
				t.Fatalf("fn's error: got %v after %d events, want it after 1", err, n)
			}
		}
	})
}
