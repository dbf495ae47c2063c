package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The repository's own docs: no package doc code block that does not
// compile, no doc comment naming what does not exist (scripts/test.sh runs
// this, so CI does).
func TestRepositoryDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d modules, %d packages, %d doc comments, %d code blocks compiled, %d names resolved, %d unchecked",
		rep.Modules, rep.Packages, rep.Comments, rep.Blocks, rep.Resolved, len(rep.Unchecked))
	for _, u := range rep.Unchecked {
		t.Logf("unchecked: %s", u)
	}
	// The walk must have seen the tree: a check that loads nothing finds
	// nothing.
	if rep.Modules < 10 || rep.Packages < 50 || rep.Blocks < 10 || rep.Resolved < 1000 {
		t.Fatalf("the check saw too little of the repository: %+v", rep)
	}
	if len(rep.Problems) > 0 {
		t.Errorf("%d doc problems (fix the doc text):\n  %s", len(rep.Problems), strings.Join(rep.Problems, "\n  "))
	}
}

// A fixture whose docs rotted in every way the check looks for, and in ways
// it must let pass.
func TestFindsRot(t *testing.T) {
	root, err := filepath.Abs("testdata/rot")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"doc.go:12: package doc code block does not compile: unknown field Dialer in struct literal of type rot.Config",
		"doc.go:13: package doc code block does not compile: not enough arguments in call to rot.New; have (rot.Config); want (rot.Config, any)",
		"doc.go:19: doc comment links to [Missing], which does not exist (in example.com/rot)",
		"doc.go:19: doc comment links to [Config.Nope], which does not exist (in example.com/rot)",
		"doc.go:20: doc comment names rot.Registry, which does not exist (in example.com/rot)",
		"doc.go:22: doc comment names Options.Dialer, which does not exist (in example.com/rot)",
		"doc.go:33: doc comment links to [sub.Nope], which does not exist (in example.com/rot/sub)",
		"doc.go:36: doc comment links to [time.Forever], which does not exist (in time)",
		"sub/sub.go:1: doc comment names rot.Gone, which does not exist (in example.com/rot)",
		"sub/sub.go:2: doc comment names rot.Config.Nope, which does not exist (in example.com/rot)",
		"sub/sub.go:2: doc comment names example.com/rot.Nope, which does not exist (in example.com/rot)",
	}
	got := rep.Problems
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if rep.Blocks != 2 {
		t.Errorf("%d code blocks compiled, want 2 (the shell line is not Go)", rep.Blocks)
	}
}
