package job

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestNoConcreteKindOutsideItsFile: the generic code (every file of the
// package but kind.go, the registry, and the kind files) never names a
// concrete task kind: no type assertion or switch to one, no value of one,
// no method on one. What only some kinds do goes through the optional
// interfaces in kind.go. A kind file names only its own kind. This is what
// keeps a new kind to one file and one case in kindOf.
func TestNoConcreteKindOutsideItsFile(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	// The concrete kinds: the types with a send method, and where each is
	// declared.
	home := map[string]string{}
	for name, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Name.Name != "send" {
				continue
			}
			if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok {
				home[id.Name] = name
			}
		}
	}
	if len(home) < 7 {
		t.Fatalf("found only %d kinds: %v", len(home), home)
	}
	var uses, casts []string
	for name, f := range files {
		if name == "kind.go" {
			continue // the registry: kindOf and the optional interfaces
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if id, ok := n.Type.(*ast.Ident); ok && home[id.Name] != "" && home[id.Name] != name {
					casts = append(casts, fset.Position(n.Pos()).String()+": ."+id.Name)
				}
			case *ast.Ident:
				if k := home[n.Name]; k != "" && k != name {
					uses = append(uses, fset.Position(n.Pos()).String()+": "+n.Name)
				}
			}
			return true
		})
	}
	sort.Strings(casts)
	sort.Strings(uses)
	t.Logf("%d kinds; concrete-kind casts outside their files: %d; other uses: %d", len(home), len(casts), len(uses))
	if len(casts) > 0 || len(uses) > 0 {
		t.Errorf("concrete kinds named outside their own file (use an optional interface in kind.go):\n%s",
			strings.Join(append(casts, uses...), "\n"))
	}
	if _, err := os.Stat("kind.go"); err != nil {
		t.Fatal(err)
	}
}
