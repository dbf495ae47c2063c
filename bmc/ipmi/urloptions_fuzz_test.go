package ipmi

import (
	"net/url"
	"testing"
)

// FuzzURLOptions feeds arbitrary option queries to the parser: it must not
// panic; what it accepts is a usable configuration; and the canonical form
// of an accepted query (what bmc.ParseEndpoint stores) parses the same.
func FuzzURLOptions(f *testing.F) {
	for _, s := range []string{
		"cipher=3&privilege=operator&bootReadBack=device",
		"cipher=17,3&timeout=1500ms", "cipher=0", "cipher=3,3", "privilege=", "x=1",
		"bootReadBack=none&bootReadBack=full", "timeout=-1s", "%zz", "cipher=3;privilege=user",
	} {
		f.Add(s)
	}
	base, err := Options{}.resolve()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := base.withURLOptions(raw)
		if err != nil {
			return
		}
		if len(r.suites) == 0 || r.timeout <= 0 || r.privilege == 0 {
			t.Fatalf("%q: unusable configuration %+v", raw, r)
		}
		switch r.readBack {
		case BootReadBackFull, BootReadBackDevice, BootReadBackNone:
		default:
			t.Fatalf("%q: read-back %q", raw, r.readBack)
		}
		vals, _ := url.ParseQuery(raw)
		again, err := base.withURLOptions(vals.Encode())
		if err != nil {
			t.Fatalf("%q accepted, its canonical form %q refused: %v", raw, vals.Encode(), err)
		}
		if len(again.suites) != len(r.suites) || again.timeout != r.timeout || again.privilege != r.privilege || again.readBack != r.readBack {
			t.Fatalf("%q and its canonical form differ", raw)
		}
	})
}
