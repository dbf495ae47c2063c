package job

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/task"
)

// TestNoConcreteKindOutsideItsFile: the generic code (every file of the
// package but the kind files, kind.go's registry included) never names a
// concrete task kind: no type assertion or switch to one, no value of one,
// no method on one. What only some kinds do goes through the optional
// interfaces in kind.go. A kind file names only its own kind and registers
// it. This is what keeps a new kind to one file here.
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

// TestEveryActionHasAKind: each action field of task.Spec, set alone, names
// an action (Spec.Action) whose kind a kind file registered, and nothing
// else is registered.
func TestEveryActionHasAKind(t *testing.T) {
	st := reflect.TypeFor[task.Spec]()
	seen := map[string]bool{}
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
			continue // Name, Timeout
		}
		var s task.Spec
		reflect.ValueOf(&s).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
		name := s.Action()
		if name == "" {
			t.Errorf("task.Spec.%s set alone names no action: add it to task.Spec.actions", f.Name)
			continue
		}
		seen[name] = true
		if kinds[name] == nil {
			t.Errorf("action %q (task.Spec.%s) has no kind: a kind_*.go file must registerKind it", name, f.Name)
		} else if _, invalid := kindOf(&s).(invalidKind); invalid {
			t.Errorf("action %q: kindOf gives the invalid kind", name)
		}
	}
	for name := range kinds {
		if !seen[name] {
			t.Errorf("kind %q registered for no action of task.Spec", name)
		}
	}
	if len(seen) < 7 {
		t.Fatalf("found only %d actions: %v", len(seen), seen)
	}
}

// TestKindsSeeOnlyTheirTask: a kind file never reaches into the step. It
// names none of the step machine's types (so it can call none of its
// methods: persist, confirm, handleErr, failTask, driver, ...), and every
// method of its kind takes the task's view, not the step: the Stepper
// alone stores, fences, dials, retries and maps errors (kind.go).
func TestKindsSeeOnlyTheirTask(t *testing.T) {
	forbidden := map[string]bool{"stepRun": true, "stepEnv": true, "Stepper": true, "StepperConfig": true, "PersistFunc": true, "StepResult": true}
	names, err := filepath.Glob("kind_*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	kinds := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		kinds++
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && forbidden[id.Name] {
				t.Errorf("%s: a kind names %s: kinds see their task (taskView) and return decisions; the step machine acts on them", fset.Position(id.Pos()), id.Name)
			}
			return true
		})
	}
	if kinds < 7 {
		t.Fatalf("found only %d kind files", kinds)
	}
}
