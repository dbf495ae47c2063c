package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
)

// runSpec is "bmcjob run": one job from a JSON spec file; it prints the
// job's outcome on e.stdout, a line per task (-json: the final status as
// one JSON document), and the progress on e.stderr.
func runSpec(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "run", "-spec FILE [flags]")
	specPath := fs.String("spec", "", "JSON job spec file (- for standard input); required")
	asJSON := fs.Bool("json", false, "print the job's final status as JSON (one document) instead of a line per task")
	tf := addTargetFlags(fs, 30*time.Minute)
	pos, err := parseInterspersed(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("run: unexpected argument %q (the spec is given with -spec)", pos[0])
	}
	if *specPath == "" {
		return errors.New("-spec is required")
	}
	raw, err := readSpecFile(*specPath)
	if err != nil {
		return err
	}
	c, err := tf.open(e)
	if err != nil {
		return err
	}
	defer c.close()
	if c.addr != "" {
		// The address from the flag replaces the spec's, before strict
		// decoding and validation.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			// Not a JSON object: the strict decoder says so in the
			// operator's terms (encoding/json would name Go types).
			_, err = job.DecodeSpec(raw)
			if err == nil {
				err = fmt.Errorf("%w: decoding JSON: want an object", job.ErrInvalidSpec)
			}
			return fmt.Errorf("-spec %s: %w", *specPath, err)
		}
		fields["bmc"], _ = json.Marshal(c.addr)
		raw, _ = json.Marshal(fields)
	}
	spec, err := job.DecodeSpec(raw)
	if err != nil {
		return fmt.Errorf("-spec %s: %w", *specPath, err)
	}
	for i := range spec.Tasks {
		c.simulatedImage(&spec.Tasks[i])
	}
	j, err := runJob(ctx, e, c, spec, tf)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(j.Status); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "job %s: %s\n", resultWord(j.Status.Result, j.Status.Reason), j.Status.Message)
		for i, ts := range j.Status.Tasks {
			if i >= len(j.Spec.Tasks) {
				continue
			}
			line := fmt.Sprintf("  task %d/%d %s: %s", i+1, len(j.Spec.Tasks), j.Spec.Tasks[i].Describe(), resultWord(ts.Result, ts.Reason))
			// A failed task's message is in the job's line above (it
			// names the failing task), and a skipped task's says "not
			// run: " and the job's: once is enough.
			if ts.Message != "" && (ts.Result == conditions.ResultSucceeded || !strings.Contains(j.Status.Message, ts.Message) && !strings.Contains(ts.Message, j.Status.Message)) {
				line += ": " + ts.Message
			}
			fmt.Fprintln(e.stdout, line)
		}
	}
	if j.Status.Result != conditions.ResultSucceeded {
		return &resultError{fmt.Sprintf("job %s (%s): %s", j.Status.Result, j.Status.Reason, j.Status.Message)}
	}
	return nil
}

// readSpecFile reads the -spec file ("-": standard input), at most
// job.MaxSpecBytes: a larger one is refused with the limit named, having
// read no more than the limit (not cut short into "unexpected end of JSON
// input").
func readSpecFile(path string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading -spec: %w", err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, job.MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading -spec %s: %w", path, err)
	}
	if len(raw) > job.MaxSpecBytes {
		return nil, fmt.Errorf("-spec %s: %w: larger than the limit of %d KiB (job.MaxSpecBytes)", path, job.ErrInvalidSpec, job.MaxSpecBytes>>10)
	}
	return raw, nil
}
