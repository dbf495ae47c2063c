// Package clip bounds text quoted into error messages: a vendor's or a
// user's text goes in one line, escaped and cut, so a message stays short
// whatever a BMC answered. Shared by package bmc and the drivers.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// Max bounds, in bytes, one piece of quoted text (Quote's result, plus
// "..." when it was cut).
const Max = 200

// Quote quotes s (strconv.Quote: one line, control characters escaped)
// in at most Max bytes; a longer s is cut at a rune boundary, with "..."
// after the closing quote.
func Quote(s string) string {
	q := strconv.Quote(s)
	if len(q) <= Max {
		return q
	}
	n := min(len(s), Max)
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	for s = s[:n]; ; {
		if q = strconv.Quote(s); len(q) <= Max-3 || s == "" {
			return q + "..."
		}
		_, w := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-w]
	}
}
