package stagger_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage/memstore"
)

// A group's record is read from the store, which other processes (and older
// versions) write: whatever it holds, Admit, AdmitHeld and release either
// fail with an error or leave a record they can read again, with at most
// Limit live slots after a grant.
func FuzzGroupRecord(f *testing.F) {
	f.Add([]byte(`{"admitted":[{"id":"10.0.1.1:443/redfish/v1/Systems/1|j|0","at":"2026-03-01T11:59:59Z"}]}`))
	f.Add([]byte(`{"admitted":[{"id":"x","at":"2026-03-01T12:00:00Z","heldUntil":"2026-03-01T12:01:00Z"},{"id":"y","at":"2099-01-01T00:00:00Z","heldUntil":"2199-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"admitted":[{"id":"x","at":"0001-01-01T00:00:00Z","heldUntil":null}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"admitted":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		clk := clock.NewFake(t0)
		s := memstore.New()
		l := newHeld(t, s, clk, 2, 5*time.Second, time.Minute)
		key := l.Key("10.0.1")
		if _, err := s.Create(context.Background(), key, raw); err != nil {
			t.Skip()
		}
		_, release, w, err := l.AdmitHeld(context.Background(), sys(1, 1), "j", 0)
		if err != nil {
			var v any
			if json.Unmarshal(raw, &v) == nil && json.Unmarshal(raw, new(struct {
				Admitted []struct {
					At        time.Time  `json:"at"`
					HeldUntil *time.Time `json:"heldUntil"`
				} `json:"admitted"`
			})) == nil {
				t.Fatalf("a readable record was refused: %v", err)
			}
			return
		}
		release(context.Background())
		if _, err := l.Admit(context.Background(), sys(1, 2), "k", 0); err != nil {
			t.Fatalf("the record written after a grant is not readable: %v", err)
		}
		if w == 0 {
			live := 0
			for _, e := range heldEntries(t, s, key) {
				if clk.Now().Sub(e.At) < 5*time.Second || e.HeldUntil != nil {
					live++
				}
			}
			if live > 2 {
				t.Fatalf("%d live slots at limit 2 after a grant and another admission", live)
			}
		}
	})
}
