package main

import (
	"strings"
	"testing"
)

// assertNoSecret fails the test when any of secrets appears in any of
// outputs (standard output, standard error, the error main prints).
func assertNoSecret(t *testing.T, secrets []string, outputs ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			t.Fatal("assertNoSecret: an empty secret matches everything")
		}
		for i, out := range outputs {
			if strings.Contains(out, s) {
				t.Errorf("a password leaked into output %d:\n%s", i, out)
			}
		}
	}
}

// errText is err's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
