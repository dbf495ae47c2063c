package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// versionCmd is "bmcjob version" (and "bmcjob --version"): the version of
// the module bmcjob was built from, as Go recorded it in the binary.
func versionCmd(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "version", "")
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("version: unexpected argument %q", pos[0])
	}
	fmt.Fprintln(e.stdout, "bmcjob", e.buildVersion())
	return nil
}

// buildVersion is the main module's version from the build information:
// v0.1.0 when built by "go install github.com/bmckit/bmckit/cmd/bmcjob@v0.1.0",
// "(devel)" (or a pseudo-version from the VCS stamp) when built from a
// checkout, and "(devel)" when the binary carries no build information.
func (e *env) buildVersion() string {
	if e.version != "" {
		return e.version
	}
	return moduleVersion(debug.ReadBuildInfo())
}

func moduleVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil || bi.Main.Version == "" {
		return "(devel)"
	}
	return bi.Main.Version
}
