package bootstate

import (
	"fmt"
	"strings"
)

// ParseSystemUUID checks that s is a system UUID in the canonical
// 8-4-4-4-12 hexadecimal form and returns it in lower case, so the upper- and
// lower-case spellings different firmware and operating systems report name
// the same system.
//
// Hand-written rather than taken from a UUID library: SMBIOS system UUIDs
// need only this shape check (no version or variant rules, since firmware
// UUIDs often break them), and it keeps bootstate free of a dependency.
func ParseSystemUUID(s string) (string, error) {
	if len(s) != 36 {
		return "", fmt.Errorf("systemUUID %s: want 36 characters in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, got %d", quoteTrunc(s), len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", fmt.Errorf("systemUUID %s: want '-' at position %d", quoteTrunc(s), i+1)
			}
		default:
			if !isHex(c) {
				return "", fmt.Errorf("systemUUID %s: %q at position %d is not a hexadecimal digit", quoteTrunc(s), c, i+1)
			}
		}
	}
	return strings.ToLower(s), nil
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// quoteTrunc quotes s for an error message, cut to 64 bytes so a hostile
// value cannot blow up logs.
func quoteTrunc(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q...", s[:64])
	}
	return fmt.Sprintf("%q", s)
}
