package redfishtest

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactPasswords(t *testing.T) {
	for body, want := range map[string]string{
		`{"UserName":"ops","Password":"Secret-pw-1","RoleId":"Operator"}`: `{"Password":"\u003credacted\u003e","RoleId":"Operator","UserName":"ops"}`,
		`{"ResetType":"On"}`:           `{"ResetType":"On"}`,
		`["Password","Secret-pw-1"]`:   `<unparsed body with "Password" redacted>`,
		`{"Password":"Secret-pw-1"`:    `<unparsed body with "Password" redacted>`,
		`{"Oem":{"Password":"inner"}}`: `{"Oem":{"Password":"inner"}}`,
	} {
		if got := string(redactPasswords([]byte(body))); got != want {
			t.Errorf("redactPasswords(%s) = %s, want %s", body, got, want)
		}
	}
}

// Whatever a client sends, the logged body holds no top-level Password
// value.
func FuzzRedactPasswords(f *testing.F) {
	f.Add([]byte(`{"UserName":"ops","Password":"Secret-pw-1"}`))
	f.Add([]byte(`{"Password":"a","Password":"b"}`))
	f.Add([]byte(`"Password"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := redactPasswords(b)
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || m["Password"] == nil {
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			if !strings.HasPrefix(string(out), "<unparsed") {
				t.Fatalf("redacted body %q is neither JSON nor the placeholder", out)
			}
			return
		}
		if string(got["Password"]) != `"\u003credacted\u003e"` {
			t.Fatalf("the Password survived: %s", got["Password"])
		}
	})
}
