// Command doccheck keeps the repository's Go documentation from rotting. In
// every module of the repository (each go.mod, built with GOWORK=off as
// scripts/test.sh builds it) it checks that:
//
//   - every Go code block of a package doc compiles against the packages it
//     names: the block is type-checked with go/types, as the body of a
//     function (or as declarations) in a file that imports the packages it
//     uses. Names the block leaves undeclared stand for the reader's own
//     (ctx, t, store, mydriver) and are not errors; a name it qualifies
//     with a package it can resolve (job.Config, fake.Options) must exist
//     and be used as declared: an unknown field, a wrong argument count or
//     a type mismatch is an error. Lines of "..." are elisions, and "...,"
//     and "(...)" inside a line too. Blocks that are not Go (shell
//     commands, JSON, tables) are not checked;
//   - every identifier a doc comment names exists: doc links (a name in
//     square brackets, qualified or not, with a receiver or a field after
//     a dot) and qualified names in the text: pkg.Name, pkg.Type.Field
//     (job.Config.Dialer), an import path and a name, and Type.Member
//     where Type is declared in the package (Options.Dialer). A package
//     name is the file's import of that name, another import of the
//     package (tests included), the package itself, or a package of this
//     repository; code blocks may name the standard library's packages
//     too. A name whose package resolves to none of these (metav1 in a
//     package that does not import it, a variable like clk in clk.Now) is
//     not checked. Type.Member may name a member of a type of that name
//     in any package the package imports (Status.PowerState in package
//     job is task.Status's), and pkg.Names is taken for the plural of
//     pkg.Name.
//
// Doc comments are those go doc shows: a package's, and those of its
// declarations, struct fields and interface methods, exported or not, in
// the non-test files of every package (commands and internal packages
// included).
//
// Usage, from the repository root:
//
//	cd scripts/doccheck && go run . ../..
//
// It prints one line per problem (file:line: what) and exits 1 if there is
// any. The test of this module (TestRepositoryDocs) runs the same check, so
// scripts/test.sh, and CI, run it with every module's tests.
//
// The types come from the export data the go command writes (go list
// -export -deps -test, the data go vet uses), not from type-checking the
// repository's sources again, so a run costs about one go list per module:
// a few seconds with a warm build cache.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	verbose := flag.Bool("v", false, "also list the references that could not be checked")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(2)
	}
	rep, err := Check(abs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(2)
	}
	for _, p := range rep.Problems {
		fmt.Println(p)
	}
	if *verbose {
		for _, u := range rep.Unchecked {
			fmt.Println("unchecked:", u)
		}
	}
	fmt.Fprintf(os.Stderr, "doccheck: %d modules, %d packages, %d doc comments, %d code blocks compiled, %d names resolved, %d unchecked; %d problems\n",
		rep.Modules, rep.Packages, rep.Comments, rep.Blocks, rep.Resolved, len(rep.Unchecked), len(rep.Problems))
	if len(rep.Problems) > 0 {
		os.Exit(1)
	}
}
