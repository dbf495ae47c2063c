package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Report is what Check found.
type Report struct {
	// Problems are "file:line: what", file relative to the root.
	Problems []string
	// Unchecked are the references whose package could not be loaded.
	Unchecked []string
	// Counts, for the summary line.
	Modules, Packages, Comments, Blocks, Resolved int
}

// listPkg is one package of `go list -json`.
type listPkg struct {
	ImportPath   string
	Name         string
	Dir          string
	Export       string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
	ForTest      string
	Standard     bool
	Module       *struct{ Path string }
	Error        *struct{ Err string }
}

// module is one go.mod of the repository and what go list said of it.
type module struct {
	dir, path string
	own       []*listPkg        // the module's packages (not test variants)
	export    map[string]string // import path -> export data file
	imp       types.Importer
}

type checker struct {
	root string
	fset *token.FileSet
	mods []*module
	// export is every export data file any module's go list gave, by
	// import path (the first wins: a repository package built by its own
	// module or by one that requires it is the same source).
	export map[string]string
	// repo and std map a package name to the import paths of the
	// repository's (non-main) packages and the standard library's.
	repo, std map[string][]string
	stdPath   map[string]bool
	rep       Report
	unchecked map[string]bool
}

// Check checks every module under root (see the package doc).
func Check(root string) (*Report, error) {
	c := &checker{root: root, fset: token.NewFileSet(), export: map[string]string{}, repo: map[string][]string{},
		std: map[string][]string{}, stdPath: map[string]bool{}, unchecked: map[string]bool{}}
	dirs, err := findModules(root)
	if err != nil {
		return nil, err
	}
	if err := c.listStd(root); err != nil {
		return nil, err
	}
	for _, d := range dirs {
		m, err := c.listModule(d)
		if err != nil {
			c.problem(d, 0, err.Error())
			continue
		}
		c.mods = append(c.mods, m)
	}
	for _, m := range c.mods {
		for _, p := range m.own {
			if p.Name != "main" && !c.stdPath[p.ImportPath] {
				c.repo[p.Name] = append(c.repo[p.Name], p.ImportPath)
			}
		}
	}
	for _, m := range c.mods {
		c.rep.Modules++
		for _, p := range m.own {
			c.checkPackage(m, p)
		}
	}
	for u := range c.unchecked {
		c.rep.Unchecked = append(c.rep.Unchecked, u)
	}
	sort.Strings(c.rep.Problems)
	sort.Strings(c.rep.Unchecked)
	return &c.rep, nil
}

// findModules returns the directories under root holding a go.mod, without
// testdata, vendor and hidden or underscore directories.
func findModules(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "go.mod" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// goCmd runs the go command in dir as scripts/test.sh does: GOWORK=off.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return out, nil
}

func decodePkgs(out []byte) ([]*listPkg, error) {
	var pkgs []*listPkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := &listPkg{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// listStd learns the standard library's package names (no build).
func (c *checker) listStd(dir string) error {
	out, err := goCmd(dir, "list", "-e", "-json=ImportPath,Name", "std")
	if err != nil {
		return err
	}
	pkgs, err := decodePkgs(out)
	if err != nil {
		return err
	}
	for _, p := range pkgs {
		c.stdPath[p.ImportPath] = true
		if strings.Contains(p.ImportPath, "internal") || strings.HasPrefix(p.ImportPath, "vendor/") || p.Name == "main" {
			continue
		}
		c.std[p.Name] = append(c.std[p.Name], p.ImportPath)
	}
	return nil
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+(\S+)`)

// listModule runs go list -export over the module's packages, their tests
// and everything they import.
func (c *checker) listModule(dir string) (*module, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	mm := moduleLine.FindSubmatch(gomod)
	if mm == nil {
		return nil, errors.New("go.mod: no module line")
	}
	m := &module{dir: dir, path: strings.Trim(string(mm[1]), `"`), export: map[string]string{}}
	out, err := goCmd(dir, "list", "-e", "-export", "-deps", "-test",
		"-json=ImportPath,Name,Dir,Export,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,ForTest,Standard,Module,Error", "./...")
	if err != nil {
		return nil, err
	}
	pkgs, err := decodePkgs(out)
	if err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		variant := strings.Contains(p.ImportPath, " [") || strings.HasSuffix(p.ImportPath, ".test") || p.ForTest != ""
		if variant {
			continue
		}
		if p.Export != "" {
			m.export[p.ImportPath] = p.Export
			if _, ok := c.export[p.ImportPath]; !ok {
				c.export[p.ImportPath] = p.Export
			}
		}
		if p.Module != nil && p.Module.Path == m.path && p.Dir != "" && strings.HasPrefix(p.Dir+string(filepath.Separator), dir+string(filepath.Separator)) {
			m.own = append(m.own, p)
		}
	}
	m.imp = importer.ForCompiler(c.fset, "gc", func(path string) (io.ReadCloser, error) {
		f := m.export[path]
		if f == "" {
			f = c.export[path]
		}
		if f == "" && c.stdPath[path] {
			f = c.stdExport(dir, path)
		}
		if f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	return m, nil
}

// stdExport builds (or finds in the build cache) the export data of a
// standard package no module imports, for a name a doc uses.
func (c *checker) stdExport(dir, path string) string {
	out, err := goCmd(dir, "list", "-export", "-f", "{{.Export}}", path)
	if err != nil {
		return ""
	}
	f := strings.TrimSpace(string(out))
	c.export[path] = f
	return f
}

func (c *checker) problem(file string, line int, msg string) {
	rel, err := filepath.Rel(c.root, file)
	if err != nil {
		rel = file
	}
	if line > 0 {
		rel += ":" + strconv.Itoa(line)
	}
	c.rep.Problems = append(c.rep.Problems, rel+": "+msg)
}

// pkgCtx is one package being checked.
type pkgCtx struct {
	m    *module
	p    *listPkg
	self *types.Package
	// imports maps a name to the import paths files of the package
	// (tests included) import under it.
	imports map[string][]string
}

// fileCtx is one file's imports.
type fileCtx struct {
	name    string
	imports map[string][]string
}

func (c *checker) checkPackage(m *module, p *listPkg) {
	if p.Error != nil {
		c.problem(p.Dir, 0, "go list: "+strings.TrimSpace(p.Error.Err))
		return
	}
	if len(p.GoFiles)+len(p.CgoFiles) == 0 {
		return // tests only: no doc go doc would show
	}
	c.rep.Packages++
	pc := &pkgCtx{m: m, p: p, imports: map[string][]string{}}
	self, err := m.imp.Import(p.ImportPath)
	if err != nil {
		c.problem(p.Dir, 0, "loading the package's types: "+err.Error())
		return
	}
	pc.self = self
	var files []*ast.File
	var names []string
	for _, n := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
		path := filepath.Join(p.Dir, n)
		f, err := parser.ParseFile(c.fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			c.problem(path, 0, err.Error())
			continue
		}
		files = append(files, f)
		names = append(names, path)
	}
	fileImports := make([]map[string][]string, len(files))
	for i, f := range files {
		fileImports[i] = c.importsOf(m, f)
		for k, v := range fileImports[i] {
			pc.imports[k] = append(pc.imports[k], v...)
		}
	}
	for _, n := range append(append([]string{}, p.TestGoFiles...), p.XTestGoFiles...) {
		f, err := parser.ParseFile(c.fset, filepath.Join(p.Dir, n), nil, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for k, v := range c.importsOf(m, f) {
			pc.imports[k] = append(pc.imports[k], v...)
		}
	}
	for i, f := range files {
		fc := &fileCtx{name: names[i], imports: fileImports[i]}
		if f.Doc != nil {
			c.checkComment(pc, fc, f.Doc, true)
		}
		for _, cg := range docComments(f) {
			c.checkComment(pc, fc, cg, false)
		}
	}
}

// importsOf maps each name a file imports under to its import path.
func (c *checker) importsOf(m *module, f *ast.File) map[string][]string {
	out := map[string][]string{}
	for _, is := range f.Imports {
		path, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			continue
		}
		name := ""
		if is.Name != nil {
			name = is.Name.Name
		} else if pkg, err := m.imp.Import(path); err == nil {
			name = pkg.Name()
		} else {
			name = filepath.Base(path)
		}
		if name == "_" || name == "." {
			continue
		}
		out[name] = append(out[name], path)
	}
	return out
}

// docComments are the declaration doc comments of f (not the package's):
// declarations, specs, struct fields and interface methods.
func docComments(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	add := func(cg *ast.CommentGroup) {
		if cg != nil {
			out = append(out, cg)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			add(n.Doc)
			return false // comments inside bodies are not docs
		case *ast.GenDecl:
			add(n.Doc)
		case *ast.TypeSpec:
			add(n.Doc)
			add(n.Comment)
		case *ast.ValueSpec:
			add(n.Doc)
			add(n.Comment)
		case *ast.Field:
			add(n.Doc)
			add(n.Comment)
		}
		return true
	})
	return out
}

// candidates are the import paths a package name may stand for in a
// file, most specific first: the file's imports, the package itself, the
// package's other imports (tests included), the repository's packages,
// the standard library's.
//
// The standard library's packages are candidates only for code blocks
// (std): in the text, a name like metrics or errors is more often a
// variable than a package the file does not import.
func (c *checker) candidates(pc *pkgCtx, fc *fileCtx, name string, selfFirst, std bool) []string {
	var out []string
	seen := map[string]bool{}
	add := func(ps ...string) {
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	if selfFirst && name == pc.p.Name {
		add(pc.p.ImportPath)
	}
	if fc != nil {
		add(fc.imports[name]...)
	}
	if name == pc.p.Name {
		add(pc.p.ImportPath)
	}
	add(pc.imports[name]...)
	add(c.repo[name]...)
	if std {
		add(c.std[name]...)
	}
	return out
}

// load returns the types of the package at path, or nil (and records the
// reference as unchecked) when there is no export data for it.
func (c *checker) load(pc *pkgCtx, path string) *types.Package {
	if path == pc.p.ImportPath {
		return pc.self
	}
	pkg, err := pc.m.imp.Import(path)
	if err != nil {
		return nil
	}
	return pkg
}

// resolves reports whether names (Name, Name.Member, ...) exist in pkg.
func resolves(pkg *types.Package, names []string) bool {
	obj := pkg.Scope().Lookup(names[0])
	if obj == nil {
		return false
	}
	for _, n := range names[1:] {
		var t types.Type
		switch o := obj.(type) {
		case *types.TypeName, *types.Var:
			t = o.Type()
		default:
			return false
		}
		next, _, _ := types.LookupFieldOrMethod(t, true, obj.Pkg(), n)
		if next == nil {
			if _, isPtr := t.(*types.Pointer); !isPtr {
				next, _, _ = types.LookupFieldOrMethod(types.NewPointer(t), true, obj.Pkg(), n)
			}
		}
		if next == nil {
			return false
		}
		obj = next
	}
	return true
}

// plural accepts "three job.Runners": the last name with an s, in the
// text, for what it names.
func plural(pkg *types.Package, names []string) bool {
	last := names[len(names)-1]
	if !strings.HasSuffix(last, "s") || len(last) < 3 {
		return false
	}
	sing := append(append([]string{}, names[:len(names)-1]...), strings.TrimSuffix(last, "s"))
	return resolves(pkg, sing)
}

// ref is one name a doc comment uses: a package qualifier (may be empty:
// the package itself) and the names after it.
type ref struct {
	qual  string // package name, or an import path when path is set
	path  bool
	names []string
	text  string
}

// checkRef reports a reference that resolves in none of its candidate
// packages; one whose packages cannot be loaded is unchecked.
func (c *checker) checkRef(pc *pkgCtx, fc *fileCtx, line int, r ref, link bool) {
	var cands []string
	switch {
	case r.qual == "":
		cands = []string{pc.p.ImportPath}
	case r.path:
		cands = []string{r.qual}
	default:
		cands = c.candidates(pc, fc, r.qual, false, false)
	}
	if r.qual == "" && len(r.names) > 1 {
		// Type.Member in the text may mean another package's type of
		// that name (task.Status in package job, which has a Status of
		// its own): any package this one imports, or the repository's,
		// will do.
		for _, ps := range pc.imports {
			cands = append(cands, ps...)
		}
		for _, ps := range c.repo {
			cands = append(cands, ps...)
		}
	}
	if len(cands) == 0 {
		return // not a package this repository knows: not a reference
	}
	loaded := false
	for _, path := range cands {
		pkg := c.load(pc, path)
		if pkg == nil {
			continue
		}
		loaded = true
		if len(r.names) == 0 || resolves(pkg, r.names) || plural(pkg, r.names) {
			c.rep.Resolved++
			return
		}
	}
	if !loaded {
		c.unchecked[fmt.Sprintf("%s: %s (no export data for %s)", relTo(c.root, fc.name), r.text, strings.Join(cands, ", "))] = true
		return
	}
	what := "names"
	if link {
		what = "links to"
	}
	where := pc.p.ImportPath
	if r.qual != "" {
		where = strings.Join(cands, " or ")
	}
	c.problem(fc.name, line, fmt.Sprintf("doc comment %s %s, which does not exist (in %s)", what, r.text, where))
}

func relTo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return rel
	}
	return path
}

// qualified matches a qualified name in doc text: an optional import path
// prefix, a first identifier, and one or more .Names.
var qualified = regexp.MustCompile(`(?:^|[^\w.*/\-])\*?((?:[A-Za-z0-9_.\-~]+/)*)([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)`)

func allCaps(s string) bool {
	return strings.ToUpper(s) == s
}

func isUpper(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r)
}

// textRefs finds the qualified names in a piece of doc text.
func (c *checker) textRefs(pc *pkgCtx, fc *fileCtx, s string) []ref {
	var out []ref
	for _, m := range qualified.FindAllStringSubmatch(s, -1) {
		prefix, first := m[1], m[2]
		var names []string
		for _, n := range strings.Split(strings.TrimPrefix(m[3], "."), ".") {
			if !isUpper(n) {
				break
			}
			names = append(names, n)
		}
		if len(names) == 0 {
			continue
		}
		text := prefix + first + "." + strings.Join(names, ".")
		switch {
		case prefix != "":
			path := prefix + first
			if _, ok := c.export[path]; !ok && !c.stdPath[path] {
				continue // a path this repository does not build
			}
			out = append(out, ref{qual: path, path: true, names: names, text: text})
		case isUpper(first):
			// Type.Member of this package; another package's type
			// named in passing is not resolved here.
			obj := pc.self.Scope().Lookup(first)
			if obj == nil {
				continue
			}
			if _, ok := obj.(*types.TypeName); !ok {
				if _, ok := obj.(*types.Var); !ok {
					continue
				}
			}
			out = append(out, ref{names: append([]string{first}, names...), text: text})
		default:
			out = append(out, ref{qual: first, names: names, text: text})
		}
	}
	return out
}

// checkComment checks one doc comment: its links and qualified names, and
// for a package doc its Go code blocks.
func (c *checker) checkComment(pc *pkgCtx, fc *fileCtx, cg *ast.CommentGroup, pkgDoc bool) {
	c.rep.Comments++
	startLine := c.fset.Position(cg.Pos()).Line
	text := cg.Text()
	lineOf := lineFinder(text, startLine)
	p := comment.Parser{
		LookupPackage: func(name string) (string, bool) {
			if len(c.candidates(pc, fc, name, false, false)) == 0 {
				return "", false
			}
			return name, true // the name itself: checkRef resolves it
		},
		// A bracketed name is a link when the package declares it, or
		// when it looks like one that was meant (Upper or Type.Member);
		// [NAME] and [FILE] in a usage line are placeholders, not links.
		LookupSym: func(recv, name string) bool {
			if recv != "" {
				return isUpper(recv) || pc.self.Scope().Lookup(recv) != nil
			}
			return isUpper(name) && !allCaps(name) || pc.self.Scope().Lookup(name) != nil
		},
	}
	doc := p.Parse(text)
	var walk func(ts []comment.Text)
	walk = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case comment.Plain:
				for _, r := range c.textRefs(pc, fc, string(t)) {
					c.checkRef(pc, fc, lineOf(r.text), r, false)
				}
			case comment.Italic:
				for _, r := range c.textRefs(pc, fc, string(t)) {
					c.checkRef(pc, fc, lineOf(r.text), r, false)
				}
			case *comment.Link:
				walk(t.Text)
			case *comment.DocLink:
				var names []string
				if t.Recv != "" {
					names = append(names, t.Recv)
				}
				if t.Name != "" {
					names = append(names, t.Name)
				}
				txt := strings.Join(names, ".")
				if t.ImportPath != "" {
					txt = t.ImportPath + "." + txt
				}
				txt = "[" + strings.TrimSuffix(txt, ".") + "]"
				c.checkRef(pc, fc, lineOf(strings.Trim(txt, "[]")), ref{qual: t.ImportPath, names: names, text: txt}, true)
			}
		}
	}
	var blocks func(bs []comment.Block)
	blocks = func(bs []comment.Block) {
		for _, b := range bs {
			switch b := b.(type) {
			case *comment.Paragraph:
				walk(b.Text)
			case *comment.Heading:
				walk(b.Text)
			case *comment.List:
				for _, it := range b.Items {
					blocks(it.Content)
				}
			case *comment.Code:
				if pkgDoc {
					c.checkCode(pc, fc, b.Text, lineOf(firstLine(b.Text)))
				}
			}
		}
	}
	blocks(doc.Content)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// lineFinder maps a piece of a comment's text to the line of the file it
// is on: the first line of the comment holding it, searched from the last
// line found on, so repeated pieces map in order.
func lineFinder(text string, start int) func(string) int {
	lines := strings.Split(text, "\n")
	from := 0
	return func(piece string) int {
		piece = strings.TrimSpace(piece)
		for i := from; i < len(lines); i++ {
			if strings.Contains(lines[i], piece) {
				from = i
				return start + i
			}
		}
		for i := range lines {
			if strings.Contains(lines[i], piece) {
				return start + i
			}
		}
		return start
	}
}
