// The repository's root holds no package; this test-only package checks the
// documentation of every module in the tree.
package bmckit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every public package of every module in the repository has at least one
// Example function in its tests (go test compiles each, and runs those with
// an Output comment), so each package's documentation shows it in use.
// Public: a package whose import path has no internal element, that is not
// a command (package main) and that has non-test Go files; testdata is not
// code.
func TestEveryPublicPackageHasAnExample(t *testing.T) {
	var public, missing []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "internal" || name == "vendor") {
			return filepath.SkipDir
		}
		pkg, examples, err := scanPackage(path)
		if err != nil {
			return err
		}
		if pkg == "" || pkg == "main" {
			return nil
		}
		public = append(public, path)
		if examples == 0 {
			missing = append(missing, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the tree (a moved test would see nothing).
	for _, want := range []string{"job", "bmc/redfish", "storage/sqlstore", "bmc/fake"} {
		if !slices.Contains(public, want) {
			t.Fatalf("package %s not found among the public packages %v", want, public)
		}
	}
	t.Logf("%d public packages", len(public))
	if len(missing) > 0 {
		t.Errorf("%d public packages have no Example function (add one in an example_test.go):\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
}

// scanPackage returns the package name of dir's non-test Go files ("" when
// it has none) and how many Example functions its test files declare.
func scanPackage(dir string) (pkg string, examples int, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") {
			continue
		}
		if !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				return "", 0, err
			}
			if ignored(f) {
				continue
			}
			pkg = f.Name.Name
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", 0, err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if ok && fn.Recv == nil && isExampleName(fn.Name.Name) && fn.Type.Params.NumFields() == 0 && fn.Type.Results == nil {
				examples++
			}
		}
	}
	return pkg, examples, nil
}

// isExampleName matches what go test treats as an example: Example, or
// Example followed by a suffix that does not start with a lower-case letter
// (ExampleFoo, Example_bar, ExampleFoo_bar).
func isExampleName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Example")
	if !ok {
		return false
	}
	return rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z')
}

// ignored reports a file built only with the ignore tag (a generator, a
// tool), which is no part of the package.
func ignored(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		for _, c := range cg.List {
			if c.Text == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}
