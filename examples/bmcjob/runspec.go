package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
)

// runSpec is "bmcjob run": one job from a JSON spec file; it prints the
// job's final status as JSON.
func runSpec(ctx context.Context, args []string, password string, out io.Writer) error {
	fs := newFlagSet("run", "-spec FILE [flags]", out)
	specPath := fs.String("spec", "", "JSON job spec file (- for standard input); required")
	tf := addTargetFlags(fs, 30*time.Minute)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("run: unexpected argument %q (the spec is given with -spec)", pos[0])
	}
	if *specPath == "" {
		return errors.New("-spec is required")
	}
	var raw []byte
	if *specPath == "-" {
		raw, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	} else {
		raw, err = os.ReadFile(*specPath)
	}
	if err != nil {
		return fmt.Errorf("reading -spec: %w", err)
	}
	c, err := tf.open(out, password)
	if err != nil {
		return err
	}
	defer c.close()
	if c.addr != "" {
		// The address from the flag replaces the spec's, before strict
		// decoding and validation.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return fmt.Errorf("-spec %s: %w: decoding JSON: %v", *specPath, job.ErrInvalidSpec, err)
		}
		fields["bmc"], _ = json.Marshal(c.addr)
		raw, _ = json.Marshal(fields)
	}
	spec, err := job.DecodeSpec(raw)
	if err != nil {
		return fmt.Errorf("-spec %s: %w", *specPath, err)
	}
	j, err := runJob(ctx, c, spec, tf.timeout, out)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(j.Status); err != nil {
		return err
	}
	if j.Status.Result != conditions.ResultSucceeded {
		return fmt.Errorf("job %s: %s", j.Status.Result, j.Status.Message)
	}
	return nil
}
