package storage_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bmckit/bmckit/storage"
)

// FuzzValidateKey checks ValidateKey against its documented rules, and that
// its errors wrap ErrInvalidKey.
func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"", "jobs/a", "a\x00b", "a\nb", "\xff", "é", strings.Repeat("k", storage.MaxKeyLen+1), "a\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := storage.ValidateKey(key)
		want := key != "" && len(key) <= storage.MaxKeyLen && utf8.ValidString(key) &&
			!strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f })
		if (err == nil) != want {
			t.Fatalf("ValidateKey(%q) = %v, want valid=%v", key, err, want)
		}
		if err != nil && !errors.Is(err, storage.ErrInvalidKey) {
			t.Fatalf("ValidateKey(%q) error %v does not wrap ErrInvalidKey", key, err)
		}
	})
}
