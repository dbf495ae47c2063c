package bootstate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bootstate"
)

func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"systemUUID":"4c4c4544-0042-4a10-8031-b2c04f4e4a31"}`,
		`{"systemUUID":"4C4C4544-0042-4A10-8031-B2C04F4E4A31","attemptID":"job-1","token":"abc","signal":"BootStateReceived","message":"up"}`,
		`{"systemUUID":42}`,
		`{"systemUUID":"x","extra":1}`,
		`{"systemUUID":"4c4c4544-0042-4a10-8031-b2c04f4e4a31"} {}`,
		`[]`, `null`, `"str"`, ``, `{`, `{"message":"\u0000"}`,
		`{"systemUUID":"4c4c4544-0042-4a10-8031-b2c04f4e4a31","attemptID":"a\u00e9"}`,
		`{"SYSTEMUUID":"4c4c4544-0042-4a10-8031-b2c04f4e4a31"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := bootstate.DecodeRequest(bytes.NewReader(body), 1024)
		if err != nil {
			if len(body) > 1024 && !errors.Is(err, bootstate.ErrBodyTooLarge) {
				t.Fatalf("oversized body: %v", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(body) > 1024 {
			t.Fatalf("accepted %d bytes over a 1024-byte limit", len(body))
		}
		// Accepted requests are normalised and valid.
		if u, err := bootstate.ParseSystemUUID(req.SystemUUID); err != nil || u != req.SystemUUID || strings.ToLower(u) != u {
			t.Fatalf("accepted bad or non-lower-case UUID %q: %v", req.SystemUUID, err)
		}
		if req.AttemptID != "" {
			if err := bootstate.ValidateAttemptID(req.AttemptID); err != nil {
				t.Fatalf("accepted bad attempt ID: %v", err)
			}
		}
		if req.Signal != "" {
			if err := bootstate.ValidateSignal(req.Signal); err != nil {
				t.Fatalf("accepted bad signal: %v", err)
			}
		}
		if len(req.Message) > bootstate.MaxMessageLen {
			t.Fatalf("accepted %d-byte message", len(req.Message))
		}
		// Round trip: re-encoding and decoding gives the same request.
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := bootstate.DecodeRequest(bytes.NewReader(again), 4096)
		if err != nil || back != req {
			t.Fatalf("round trip: %+v -> %s -> %+v, %v", req, again, back, err)
		}
	})
}
