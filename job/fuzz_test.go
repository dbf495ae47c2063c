package job_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/job"
)

// FuzzDecodeSpec: decoding and validating a job spec from outside never
// panics, errors wrap ErrInvalidSpec, an accepted spec re-encodes and
// re-decodes to an equal Spec, and a password in the BMC URL (or in an
// image or HTTP boot URI) never shows in an error.
func FuzzDecodeSpec(f *testing.F) {
	b, err := json.Marshal(validJobSpec())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{
		`{"bmc":"ipmi://h","tasks":[{"power":{"op":"on"}}]}`,
		`{"bmc":"redfish+http://[::1]:8000/redfish/v1/Systems/1","tasks":[{"virtualMedia":{"eject":true,"kind":"usb"}}],"timeout":90}`,
		`{"bmc":"ipmi://h","tasks":[{"waitForBoot":{}}]}`,
		`{"bmc":"redfish://user:secret@h","tasks":[{"power":{"op":"on"}}]}`,
		`{"bmc":"ipmi://h","tasks":[{"power":{"op":"on"}}]}}`,
		`{"bmc":"ipmi://h","tasks":null}`,
		`{"bmc":"redfish://h/redfish/v1/Systems/1","tasks":[{"powerStatus":{}},{"reachable":{},"timeout":"20s"}]}`,
		`{"bmc":"redfish://h","tasks":[{"bmcReset":{"type":"cold"}},{"reachable":{}}]}`,
		`{"bmc":"redfish://h","tasks":[{"bmcReset":{"type":"hot"}}]}`,
		`{"bmc":"redfish://h","tasks":[{"bootDevice":{"device":"http","uri":"https://boot.example/ipxe.efi","mode":"uefi","persistent":true}}]}`,
		`{"bmc":"redfish://h","tasks":[{"bootDevice":{"device":"http","uri":"https://user:secret@boot.example/x.efi"}}]}`,
		`{"bmc":"redfish://h","tasks":[{"bootDevice":{"device":"http","uri":"http://h/a b.efi"}}]}`,
		`{"bmc":"redfish://h","tasks":[{"bootDevice":{"device":"disk","uri":"http://h/x.efi"}}]}`,
		`{"bmc":"redfish://h","tasks":[{"powerStatus":{},"reachable":{}}]}`,
		`{"bmc":"ipmi://h","tasks":[{"custom":{"kind":"example.com/x","params":{ "a" : [1, 2.50], "b": "<\u2028>" }}}]}`,
		`{"bmc":"ipmi://h","tasks":[{"custom":{"kind":"example.com/x","params":null}}]}`,
		`{"bmc":"ipmi://h","tasks":[{"custom":{"kind":"x","params":[]}}]}`,
		`{}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := job.DecodeSpec(data)
		if err != nil {
			if !errors.Is(err, job.ErrInvalidSpec) {
				t.Fatalf("error does not wrap ErrInvalidSpec: %v", err)
			}
			// Other fields' values are echoed on purpose; only the BMC URL
			// may carry credentials.
			bmcErr := strings.HasPrefix(err.Error(), job.ErrInvalidSpec.Error()+": bmc:")
			if bmcErr && strings.Contains(string(data), ":secret@") && strings.Contains(err.Error(), "secret") {
				t.Fatalf("error repeats a password: %v", err)
			}
			// Image and boot URIs with credentials are refused without
			// echoing them.
			if strings.Contains(err.Error(), "secret@") {
				t.Fatalf("error repeats a URL's credentials: %v", err)
			}
			return
		}
		if len(s.Tasks) == 0 {
			t.Fatalf("accepted a spec without tasks: %q", data)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		back, err := job.DecodeSpec(out)
		if err != nil {
			t.Fatalf("re-decoding %s (from %q): %v", out, data, err)
		}
		if !reflect.DeepEqual(s, back) {
			t.Fatalf("round trip changed the spec:\n in  %q\n out %s", data, out)
		}
	})
}
