package bootstate_test

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bootstate"
)

func FuzzParseSystemUUID(f *testing.F) {
	for _, s := range []string{uuidA, strings.ToUpper(uuidA), "", "4c4c4544", "4c4c4544-0042-4a10-8031-b2c04f4e4a3g", "{" + uuidA + "}", "4c4c4544004a10-8031-b2c04f4e4a31-xx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := bootstate.ParseSystemUUID(s)
		if err != nil {
			if len(err.Error()) > 450 { // 64 input bytes quoted (up to 4 bytes each) plus the text
				t.Fatalf("error message of %d bytes: the value is not truncated", len(err.Error()))
			}
			return
		}
		if len(u) != 36 || u != strings.ToLower(s) {
			t.Fatalf("ParseSystemUUID(%q) = %q", s, u)
		}
		if again, err := bootstate.ParseSystemUUID(strings.ToUpper(s)); err != nil || again != u {
			t.Fatalf("upper-case %q: %q %v", s, again, err)
		}
	})
}

func FuzzUUIDFromPath(f *testing.F) {
	for _, s := range []string{"/ipxe/" + uuidA, "/ignition/" + uuidA + ".ign?attempt=a&token=t", "/", "/a/b/c", "/x/" + strings.ToUpper(uuidA) + "/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Host != "" {
			return
		}
		r := httptest.NewRequest("GET", "http://example.test/", nil)
		r.URL = u
		id, err := bootstate.UUIDFromPath(r)
		if err != nil {
			t.Fatalf("UUIDFromPath(%q): %v", target, err)
		}
		if id.SystemUUID == "" {
			return
		}
		if _, err := bootstate.ParseSystemUUID(id.SystemUUID); err != nil || !strings.Contains(strings.ToLower(u.Path), id.SystemUUID) {
			t.Fatalf("UUIDFromPath(%q) = %+v (%v)", target, id, err)
		}
	})
}
