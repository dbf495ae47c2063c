package bmclib

import (
	"strings"
	"testing"
)

// FuzzIPMIToolURLOptions: any query either applies or fails with an error
// that names an option the query holds (or the query's syntax).
func FuzzIPMIToolURLOptions(f *testing.F) {
	for _, s := range []string{"cipher=3", "cipher=17,3", "privilege=operator", "bootReadBack=none&timeout=5s", "x=1", "timeout=%zz", "cipher=3&cipher=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := IPMIToolOptions{}.withURLOptions(raw)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "bmclib: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
			return
		}
		if o.CipherSuite < 0 || o.CipherSuite > 255 || o.Timeout < 0 || o.DialTimeout < 0 {
			t.Fatalf("%q applied out-of-range options %+v", raw, o)
		}
	})
}
