package task_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/bmckit/bmckit/task"
)

// FuzzDecode: decoding and validating outside input never panics, every
// error wraps ErrInvalid, and whatever is accepted re-encodes and re-decodes
// to an equal Spec.
func FuzzDecode(f *testing.F) {
	for _, s := range validSpecs() {
		b, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"power":{"op":"on"},"timeout":90}`,
		`{"power":{"op":"on"},"timeout":null}`,
		`{"power":{"op":"on"},"timeout":1e300}`,
		`{"power":{"op":"on"}}}`,
		`{"Power":{"OP":"off"}}`,
		`{"power":{"op":"on"},"power":null}`,
		`{"virtualMedia":{"imageURL":"http://u:p/w@h/x.iso"}}`,
		`{"waitForBoot":{"systemUUID":"4c4c4544-0047-3510-8052-b4c04f56443\u00e9"}}`,
		`{"powerStatus":{}}`,
		`{"reachable":{},"timeout":"10s"}`,
		`{"bmcReset":{"type":"warm"}}`,
		`{"bmcReset":{}}`,
		`{"locatorLED":{"state":"blinking"}}`,
		`{"locatorLED":{"state":"Lit"}}`,
		`{"locatorLED":{}}`,
		`{"nmi":{}}`,
		`{"nmi":{"state":"on"}}`,
		`{"bootDevice":{"device":"http","uri":"https://boot.example/ipxe.efi","mode":"uefi"}}`,
		`{"bootDevice":{"device":"http","uri":"http://a:secret@h/x.efi"}}`,
		`{"bootDevice":{"device":"http","uri":"http://[::1]:80/x\u0000.efi"}}`,
		`{"bootDevice":{"device":"pxe","uri":"http://h/x.efi"}}`,
		`{"bootDevice":{"device":"http"}}`,
		`{}`, `null`, ``, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := task.Decode(data)
		if err != nil {
			if !errors.Is(err, task.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if s.Action() == "" {
			t.Fatalf("accepted a spec with no action: %s", data)
		}
		_ = s.Describe()
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("re-encoding accepted spec: %v", err)
		}
		back, err := task.Decode(b)
		if err != nil {
			t.Fatalf("re-decoding %s (from %q): %v", b, data, err)
		}
		if !reflect.DeepEqual(s, back) {
			t.Fatalf("round trip changed the spec:\n in  %q\n out %s\n %#v\n %#v", data, b, s, back)
		}
	})
}
