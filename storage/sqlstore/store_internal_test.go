package sqlstore

import (
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPrefixEnd checks the key range List uses against strings.HasPrefix on
// random keys drawn from a small alphabet with multi-byte and edge runes.
func TestPrefixEnd(t *testing.T) {
	alphabet := []rune{'a', 'b', 0x7f - 1, 0xE9, 0xD7FF, 0xE000, 0xFFFF, utf8.MaxRune, 0x1F600}
	rnd := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rnd.IntN(len(alphabet))])
		}
		return b.String()
	}
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = word(1 + rnd.IntN(4))
	}
	sort.Strings(keys)
	for range 500 {
		prefix := word(rnd.IntN(3))
		end, ok := prefixEnd(prefix)
		for _, k := range keys {
			inRange := k >= prefix && (!ok || k < end)
			if inRange != strings.HasPrefix(k, prefix) {
				t.Fatalf("prefix %q end %q (bounded %v): key %q in range = %v, has prefix = %v", prefix, end, ok, k, inRange, !inRange)
			}
		}
		if ok && !utf8.ValidString(end) {
			t.Fatalf("prefixEnd(%q) = %q is not valid UTF-8", prefix, end)
		}
	}
	if _, ok := prefixEnd(""); ok {
		t.Fatal("empty prefix must be unbounded")
	}
	if end, ok := prefixEnd("a\U0010FFFF"); !ok || end != "b" {
		t.Fatalf(`prefixEnd("a\U0010FFFF") = %q, %v; want "b"`, end, ok)
	}
	if end, _ := prefixEnd("\uD7FF"); end != "\uE000" {
		t.Fatalf("prefixEnd skips surrogates: got %q", end)
	}
}

// FuzzPrefixEnd checks the List key range on arbitrary valid UTF-8 keys and
// prefixes (what storage.ValidateKey lets through).
func FuzzPrefixEnd(f *testing.F) {
	f.Add("jobs/a", "jobs/")
	f.Add("a\U0010FFFFb", "a\U0010FFFF")
	f.Add("\uE000", "\uD7FF")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, key, prefix string) {
		if !utf8.ValidString(key) || !utf8.ValidString(prefix) {
			t.Skip()
		}
		end, ok := prefixEnd(prefix)
		inRange := key >= prefix && (!ok || key < end)
		if inRange != strings.HasPrefix(key, prefix) {
			t.Fatalf("prefix %q end %q: key %q in range = %v", prefix, end, key, inRange)
		}
	})
}
