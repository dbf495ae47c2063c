package task_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/task"
)

func TestCustomActionShape(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", task.MaxCustomParamsBytes) + `"}`
	for _, c := range []struct {
		kind, params, wantPath, wantMsg string
	}{
		{"example.com/raid-reset", `{"a":1}`, "", ""},
		{"example.com/raid-reset", `null`, "", ""},
		{"example.com/raid-reset", ` {} `, "", ""},
		{"", `{}`, "custom.kind", "empty"},
		{"raid-reset", ``, "custom.kind", `"raid-reset" is not a domain-qualified name`},
		{"Example.com/raid", ``, "custom.kind", "not a domain-qualified name"},
		{"example.com/", ``, "custom.kind", "not a domain-qualified name"},
		{"example.com/a/b", ``, "custom.kind", "not a domain-qualified name"},
		{"example.com/" + strings.Repeat("a", 250), ``, "custom.kind", "longer than 253"},
		{"example.com/x", `[1]`, "custom.params", "not a JSON object"},
		{"example.com/x", `"s"`, "custom.params", "not a JSON object"},
		{"example.com/x", `{"a":`, "custom.params", "not a JSON object"},
		{"example.com/x", big, "custom.params", "at most 16384"},
	} {
		s := task.Spec{Custom: &task.CustomAction{Kind: c.kind, Params: task.CustomParams(c.params)}}
		err := s.Validate()
		if c.wantMsg == "" {
			if err != nil {
				t.Errorf("%q %q: %v", c.kind, c.params, err)
			}
			continue
		}
		var fe *task.FieldError
		if !errors.As(err, &fe) || fe.Path != c.wantPath || !strings.Contains(fe.Msg, c.wantMsg) {
			t.Errorf("%q %.40q: got %v, want %s: ...%s...", c.kind, c.params, err, c.wantPath, c.wantMsg)
		}
	}
	both := task.Spec{Custom: &task.CustomAction{Kind: "example.com/x"}, Power: &task.PowerAction{Op: task.PowerOn}}
	if err := both.Validate(); err == nil || !strings.Contains(err.Error(), "custom and power are all set") {
		t.Errorf("custom with power: %v", err)
	}
}

// A custom task's params survive Decode as written, and its description
// names the kind.
func TestCustomActionDecode(t *testing.T) {
	s, err := task.Decode([]byte(`{"custom":{"kind":"example.com/raid-reset","params":{"controller":"RAID.Slot.3-1","force":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Custom.Params); got != `{"controller":"RAID.Slot.3-1","force":true}` {
		t.Errorf("params %s", got)
	}
	if d := s.Describe(); d != "custom example.com/raid-reset" {
		t.Errorf("Describe %q", d)
	}
	if _, err := task.Decode([]byte(`{"custom":{"kind":"example.com/x","extra":1}}`)); err == nil {
		t.Error("an unknown field beside kind and params is accepted")
	}
}
