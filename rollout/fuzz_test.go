package rollout_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/bmckit/bmckit/rollout"
)

// FuzzDecodeSpec: any input decodes to a valid spec or fails with
// ErrInvalidSpec, never panics; a decoded spec encodes and decodes again
// to the same JSON.
func FuzzDecodeSpec(f *testing.F) {
	f.Add([]byte(`{"template":{"bmc":"","tasks":[{"power":{"op":"cycle"}}]},"servers":[{"name":"n1","bmc":"redfish://10.0.0.1/redfish/v1/Systems/1","labels":{"rack":"a"}}],"policy":{"maxUnavailable":"10%","canary":1,"failureBudget":2,"maxUnavailablePerGroup":[{"label":"rack","max":1}]}}`))
	f.Add([]byte(`{"template":{"tasks":[]},"servers":[]}`))
	f.Add([]byte(`{"policy":{"maxUnavailable":"101%"}}`))
	f.Add([]byte(`{"servers":[{"name":"a"},{"name":"a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := rollout.DecodeSpec(data)
		if err != nil {
			if !errors.Is(err, rollout.ErrInvalidSpec) {
				t.Fatalf("error %v does not wrap ErrInvalidSpec", err)
			}
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := rollout.DecodeSpec(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		b2, _ := json.Marshal(s2)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the spec:\n%s\n%s", b, b2)
		}
	})
}
