package task_test

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/task"
)

// Bad secureBoot and bootOrder specs are refused at decode, naming the
// field; the password of a URI never appears in the message.
func TestSecureBootAndBootOrderSpecs(t *testing.T) {
	for _, c := range []struct{ spec, field string }{
		{`{"secureBoot":{}}`, "secureBoot.enabled"},
		{`{"secureBoot":{"enabled":true,"resetKeys":"DeletePK"}}`, "secureBoot.enabled"},
		{`{"secureBoot":{"resetKeys":"Bogus"}}`, "secureBoot.resetKeys"},
		{`{"secureBoot":{"resetKeys":"DeletePK","verifyOnly":true}}`, "secureBoot.verifyOnly"},
		{`{"bootOrder":{}}`, "bootOrder.order"},
		{`{"bootOrder":{"order":["Boot0001","Boot0001"]}}`, "bootOrder.order[1]"},
		{`{"bootOrder":{"httpBootURI":"ftp://host/x.efi"}}`, "bootOrder.httpBootURI"},
		{`{"bootOrder":{"httpBootURI":"http://admin:s3cret@host/x.efi"}}`, "bootOrder.httpBootURI"},
	} {
		_, err := task.Decode([]byte(c.spec))
		if err == nil {
			t.Errorf("%s: accepted", c.spec)
			continue
		}
		if !strings.Contains(err.Error(), c.field) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v; want the field %s named and no password", c.spec, err, c.field)
		}
	}
	for _, ok := range []string{`{"secureBoot":{"enabled":false}}`, `{"secureBoot":{"resetKeys":"ResetAllKeysToDefault"}}`,
		`{"bootOrder":{"order":["Boot0002"],"enabled":{"Boot0001":false},"httpBootURI":"https://boot.example/x.efi"}}`} {
		if _, err := task.Decode([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
