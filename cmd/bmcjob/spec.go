package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// shippedSpecs are the example specs of specs/, built into the binary so
// that "go install .../cmd/bmcjob@VERSION" brings them: a user without a
// checkout runs "bmcjob spec netboot | bmcjob run -simulate -spec -".
//
//go:embed specs/*.json
var shippedSpecs embed.FS

// specCmd is "bmcjob spec [NAME]": without a name it lists the shipped
// example specs, with one it prints that spec (to edit, or to pipe into
// "bmcjob run -spec -").
func specCmd(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "spec", "[NAME]")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	names, err := specNames()
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		for _, n := range names {
			fmt.Fprintln(e.stdout, n)
		}
		return nil
	case 1:
	default:
		return fmt.Errorf("spec: want at most one spec name, got %q", strings.Join(pos, " "))
	}
	name := strings.TrimSuffix(pos[0], ".json")
	raw, err := shippedSpecs.ReadFile("specs/" + name + ".json")
	if err != nil {
		return fmt.Errorf("spec: no shipped spec %q: want one of %s", pos[0], strings.Join(names, ", "))
	}
	_, err = e.stdout.Write(raw)
	return err
}

// specNames are the shipped specs' names, without .json, sorted.
func specNames() ([]string, error) {
	files, err := fs.Glob(shippedSpecs, "specs/*.json")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(path.Base(f), ".json")
	}
	return names, nil
}
