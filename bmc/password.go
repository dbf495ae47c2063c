package bmc

import (
	"crypto/rand"
	"fmt"
	"math/big"
)

// Character classes of generated passwords. The symbols leave out quotes,
// space, backslash, colon, '$', '!' and '&', so a password survives shells,
// configuration files (ipmi_sim's lan.conf), HTTP basic auth and URLs.
const (
	passwordLower   = "abcdefghijkmnopqrstuvwxyz" // no l: told apart from 1 and I when read aloud
	passwordUpper   = "ABCDEFGHJKLMNPQRSTUVWXYZ"  // no I, O
	passwordDigits  = "23456789"                  // no 0, 1
	passwordSymbols = "#%+-.=@_"
)

// DefaultPasswordLength is the length of a generated password when the
// policy allows it: 16, or the policy's MinLength when that is longer, or
// its MaxLength when that is shorter (IPMI: 20).
const DefaultPasswordLength = 16

// GeneratePassword returns a random password that fits p: DefaultPasswordLength
// bytes within p's bounds, with at least one lower-case letter, one
// upper-case letter, one digit and one symbol (the classes BMC strength
// rules ask for), drawn with crypto/rand. It fails when p cannot hold the
// four classes (a MaxLength under 4) or is contradictory (MinLength over
// MaxLength); the error names the field.
//
// Written by hand rather than with crypto/rand.Text, which gives base32
// (no symbols, and no guarantee of each class).
func GeneratePassword(p PasswordPolicy) (string, error) {
	if p.MinLength < 0 || p.MaxLength < 0 {
		return "", fmt.Errorf("PasswordPolicy lengths must not be negative (MinLength %d, MaxLength %d)", p.MinLength, p.MaxLength)
	}
	if p.MaxLength > 0 && p.MinLength > p.MaxLength {
		return "", fmt.Errorf("PasswordPolicy.MinLength %d is over MaxLength %d", p.MinLength, p.MaxLength)
	}
	n := max(DefaultPasswordLength, p.MinLength)
	if p.MaxLength > 0 {
		n = min(n, p.MaxLength)
	}
	classes := []string{passwordLower, passwordUpper, passwordDigits, passwordSymbols}
	if n < len(classes) {
		return "", fmt.Errorf("PasswordPolicy.MaxLength %d cannot hold a letter of each case, a digit and a symbol", p.MaxLength)
	}
	all := passwordLower + passwordUpper + passwordDigits + passwordSymbols
	b := make([]byte, n)
	for i := range b {
		set := all
		if i < len(classes) {
			set = classes[i] // one of each class first; shuffled below
		}
		c, err := randIndex(len(set))
		if err != nil {
			return "", err
		}
		b[i] = set[c]
	}
	// Fisher-Yates, so the classes' characters are not at fixed places.
	for i := n - 1; i > 0; i-- {
		j, err := randIndex(i + 1)
		if err != nil {
			return "", err
		}
		b[i], b[j] = b[j], b[i]
	}
	return string(b), nil
}

func randIndex(n int) (int, error) {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("generate a password: %w", err)
	}
	return int(v.Int64()), nil
}
