package bmc_test

import (
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func TestGeneratePasswordFitsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       bmc.PasswordPolicy
		wantLen int
	}{
		{"none", bmc.PasswordPolicy{}, bmc.DefaultPasswordLength},
		{"dmtf-min-8", bmc.PasswordPolicy{MinLength: 8}, bmc.DefaultPasswordLength},
		{"min-over-default", bmc.PasswordPolicy{MinLength: 24, MaxLength: 40}, 24},
		{"ipmi-max-20", bmc.PasswordPolicy{MaxLength: 20}, 16},
		{"max-under-default", bmc.PasswordPolicy{MinLength: 8, MaxLength: 12}, 12},
		{"exactly-4", bmc.PasswordPolicy{MaxLength: 4}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 200 {
				pw, err := bmc.GeneratePassword(tc.p)
				if err != nil {
					t.Fatal(err)
				}
				if len(pw) != tc.wantLen {
					t.Fatalf("len(%q) = %d, want %d", pw, len(pw), tc.wantLen)
				}
				if err := tc.p.Check(pw); err != nil {
					t.Fatalf("generated password does not pass its own policy: %v", err)
				}
				for _, class := range []string{"abcdefghijkmnopqrstuvwxyz", "ABCDEFGHJKLMNPQRSTUVWXYZ", "23456789", "#%+-.=@_"} {
					if !strings.ContainsAny(pw, class) {
						t.Fatalf("%q has no character of %q", pw, class)
					}
				}
				if strings.ContainsAny(pw, "\"' \\:$!&") {
					t.Fatalf("%q has a character shells or config files mangle", pw)
				}
				seen[pw] = true
			}
			// 4 characters from 65 with fixed classes still give
			// thousands of values: 200 draws with many repeats would
			// mean a broken source.
			if len(seen) < 150 {
				t.Errorf("200 draws gave only %d distinct passwords", len(seen))
			}
		})
	}
}

func TestGeneratePasswordRefusesImpossiblePolicies(t *testing.T) {
	for _, tc := range []struct {
		p    bmc.PasswordPolicy
		want string
	}{
		{bmc.PasswordPolicy{MaxLength: 3}, "MaxLength 3"},
		{bmc.PasswordPolicy{MinLength: 10, MaxLength: 8}, "MinLength 10 is over MaxLength 8"},
		{bmc.PasswordPolicy{MinLength: -1}, "negative"},
	} {
		_, err := bmc.GeneratePassword(tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GeneratePassword(%+v) = %v, want an error containing %q", tc.p, err, tc.want)
		}
	}
}

func TestPasswordPolicyCheckNamesLengthsNotPassword(t *testing.T) {
	p := bmc.PasswordPolicy{MinLength: 8, MaxLength: 20}
	for _, pw := range []string{"Sh0rt#x", "Way-T00-Long-For-This-BMC-9"} {
		err := p.Check(pw)
		if err == nil {
			t.Fatalf("Check(%d bytes) passed a policy of 8..20", len(pw))
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("Check's error leaks the password: %v", err)
		}
	}
	if err := p.Check("Exactly8"); err != nil {
		t.Errorf("Check(8 bytes): %v", err)
	}
}
