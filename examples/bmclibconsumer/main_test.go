package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/bmckit/bmckit/conditions"
)

// The module that uses bmclib's root client builds with bmckit's packages
// and runs a bmckit job against a fake BMC.
func TestJobRunsNextToBmclib(t *testing.T) {
	res, err := run(context.Background(), filepath.Join(t.TempDir(), "bmckit.db"))
	if err != nil {
		t.Fatal(err)
	}
	if res != conditions.ResultSucceeded {
		t.Fatalf("job result %q, want Succeeded", res)
	}
}
