package redfish_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/vendors.md names, for each quirk, the test that shows it: every one
// named must exist as a test function in the repository (so a renamed or
// deleted test cannot leave a row pointing at nothing), and every row
// names one unless it says "none yet".
func TestVendorsDocNamesExistingTests(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "vendors.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`(Test\\w+)")
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		if !regexp.MustCompile(`^\| \d+ \|`).MatchString(line) {
			continue
		}
		rows++
		tests := named.FindAllStringSubmatch(line, -1)
		if len(tests) == 0 && !strings.Contains(line, "none yet") {
			t.Errorf("a row names no test and does not say \"none yet\": %.80s", line)
		}
		for _, m := range tests {
			if !defined[m[1]] {
				t.Errorf("docs/vendors.md names %s, which no test file defines", m[1])
			}
		}
	}
	if rows < 20 {
		t.Errorf("docs/vendors.md has %d rows; the table was not found", rows)
	}
}
