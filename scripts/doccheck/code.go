package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"sort"
	"strings"
)

// elisions are how a doc's code block leaves things out, and what they
// become before the block is type-checked.
var elisions = strings.NewReplacer("{...,", "{", "{ ...,", "{", "(...)", "()", "{ ... }", "{ }", "[...]", "[]")

// checkCode type-checks one Go code block of a package doc (see the package
// doc for what counts as an error). line is the block's first line in the
// file.
func (c *checker) checkCode(pc *pkgCtx, fc *fileCtx, block string, line int) {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		if t := strings.TrimSpace(l); t == "..." || t == "…" {
			l = ""
		}
		lines = append(lines, elisions.Replace(l))
	}
	body := strings.Join(lines, "\n")

	// Declarations, or statements in a function body; neither: not Go.
	fset := token.NewFileSet()
	asDecls := true
	f, err := parser.ParseFile(fset, "block.go", "package p\n"+body, parser.SkipObjectResolution)
	if err != nil {
		asDecls = false
		f, err = parser.ParseFile(fset, "block.go", "package p\nfunc _() {\n"+body+"\n}", parser.SkipObjectResolution)
		if err != nil {
			return
		}
	}
	c.rep.Blocks++

	// The packages the block qualifies names with, bound to import paths;
	// names the block declares itself are not packages.
	declared := map[string]bool{}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						declared[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				declared[id.Name] = true
			}
		case *ast.Field:
			for _, id := range n.Names {
				declared[id.Name] = true
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok {
					declared[id.Name] = true
				}
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	var header strings.Builder
	header.WriteString("package doccheck\n\nimport (\n")
	var bound []string
	for name := range used {
		if declared[name] {
			continue
		}
		for _, path := range c.candidates(pc, fc, name, true, true) {
			if c.load(pc, path) != nil {
				bound = append(bound, fmt.Sprintf("\t%s %q\n", name, path))
				break
			}
		}
	}
	sort.Strings(bound)
	for _, b := range bound {
		header.WriteString(b)
	}
	header.WriteString(")\n\n")
	hdr := header.String()
	if !asDecls {
		hdr += "func _() {\n"
	}
	src := hdr + body
	if !asDecls {
		src += "\n}\n"
	}
	headerLines := strings.Count(hdr, "\n")

	fset = token.NewFileSet()
	f, err = parser.ParseFile(fset, "block.go", src, parser.SkipObjectResolution)
	if err != nil {
		c.problem(fc.name, line, "package doc code block: "+err.Error())
		return
	}
	var errs []types.Error
	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if pkg := c.load(pc, path); pkg != nil {
				return pkg, nil
			}
			return nil, fmt.Errorf("no export data for %s", path)
		}),
		Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				errs = append(errs, te)
			}
		},
	}
	_, _ = conf.Check("doccheck", fset, []*ast.File{f}, nil)
	for _, te := range errs {
		if ignorable(te.Msg) {
			continue
		}
		l := fset.Position(te.Pos).Line - headerLines
		msg := strings.Join(strings.Fields(strings.ReplaceAll(te.Msg, "\n", "; ")), " ")
		c.problem(fc.name, line+l-1, "package doc code block does not compile: "+msg)
	}
}

// ignorable are the errors a fragment makes by being a fragment: names it
// leaves to the reader (ctx, t, mydriver), values it computes without
// using them.
func ignorable(msg string) bool {
	if rest, ok := strings.CutPrefix(msg, "undefined: "); ok && !strings.Contains(rest, ".") {
		return true
	}
	for _, s := range []string{"declared and not used", "imported and not used", "is not used", "missing return"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
