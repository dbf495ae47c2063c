package bmc

import (
	"strings"
	"testing"
)

// FuzzDecodeCredentialsFile: decoding never panics, an error never carries
// a password of the input, and what decodes is saved and decoded back the
// same.
func FuzzDecodeCredentialsFile(f *testing.F) {
	f.Add([]byte(`{"credentials": {"r": {"current": {"username": "admin", "password": "pw"}}}}`))
	f.Add([]byte(`{"credentials": {"r": {"current": {"username": "a", "password": "b"}, "pending": {"username": "a", "password": "c"}}}}`))
	f.Add([]byte(`{"credentials": {"r": {"current": {"username": 1}}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeCredentialsFile(data, "f.json")
		if err != nil {
			if strings.Contains(string(data), `"password": "secret-xyz"`) && strings.Contains(err.Error(), "secret-xyz") {
				t.Fatalf("error carries the password: %v", err)
			}
			return
		}
		s := &FileCredentials{path: t.TempDir() + "/c.json"}
		if err := s.save(m); err != nil {
			t.Fatal(err)
		}
		back, err := s.load()
		if err != nil {
			t.Fatalf("saved file does not decode: %v", err)
		}
		if len(back) != len(m) {
			t.Fatalf("%d refs saved, %d read back", len(m), len(back))
		}
		for ref, p := range m {
			q := back[ref]
			if q == nil || q.Current != p.Current || (q.Pending == nil) != (p.Pending == nil) || (p.Pending != nil && *p.Pending != *q.Pending) {
				t.Fatalf("ref %q changed in a round trip", ref)
			}
		}
	})
}
