package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
)

// The -servers file of "bmcjob rollout" is JSON lines: one server per line,
// a JSON object with the fields of rollout.Server:
//
//	{"name": "node-001", "bmc": "redfish://10.0.0.5/redfish/v1/Systems/1", "labels": {"rack": "r1"}}
//	{"name": "node-002", "bmc": "ipmi://10.0.0.6", "credentialsRef": "ipmi-admin", "systemUUID": "..."}
//
// Blank lines and lines starting with # are skipped. A file whose first
// non-blank character is '[' is read as one JSON array of the same objects
// instead (what jq -s or an inventory export writes). Decoding is strict:
// an unknown field is an error. Every error names the line (and, in an
// array, the element) and the field.

// Limits of the -servers file, so a wrong file is refused before it fills
// memory.
const (
	maxServersFile = 64 << 20 // bytes
	maxServerLine  = 64 << 10 // bytes of one server's JSON
	maxLabelKey    = 63
	maxLabelValue  = 63
)

// serverAt is one server of the -servers file and where it is.
type serverAt struct {
	rollout.Server
	// where is "line 3", or "servers[2] (line 5)" in an array.
	where string
}

// readServersFile reads and decodes -servers (at most maxServersFile).
func readServersFile(path string) ([]serverAt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading -servers: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxServersFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading -servers %s: %w", path, err)
	}
	if len(data) > maxServersFile {
		return nil, fmt.Errorf("-servers %s: larger than the limit of %d MiB", path, maxServersFile>>20)
	}
	servers, err := decodeServers(data)
	if err != nil {
		return nil, fmt.Errorf("-servers %s: %w", path, err)
	}
	return servers, nil
}

// decodeServers decodes the -servers format: JSON lines, or one JSON array.
func decodeServers(data []byte) ([]serverAt, error) {
	var out []serverAt
	seen := map[string]string{}
	add := func(raw []byte, where string) error {
		if len(raw) > maxServerLine {
			return fmt.Errorf("%s: a server's JSON is larger than %d KiB", where, maxServerLine>>10)
		}
		if len(out) >= rollout.MaxServers {
			return fmt.Errorf("%s: more than %d servers (rollout.MaxServers)", where, rollout.MaxServers)
		}
		s, err := rollout.DecodeServer(raw)
		if err != nil {
			msg := err.Error()
			if errors.Is(err, rollout.ErrTrailingData) {
				msg = "more than one JSON value (one server per line)"
			}
			// A line is one line: its own position is the column.
			msg = strings.TrimPrefix(msg, "decoding JSON: ")
			msg = strings.Replace(msg, "line 1, column ", "column ", 1)
			return fmt.Errorf("%s: %s", where, msg)
		}
		if err := checkServer(&s, where, seen); err != nil {
			return err
		}
		out = append(out, serverAt{Server: s, where: where})
		return nil
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := decodeServerArray(data, add); err != nil {
			return nil, err
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 4096), maxServerLine)
		line := 0
		for sc.Scan() {
			line++
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 || b[0] == '#' {
				continue
			}
			if err := add(b, "line "+strconv.Itoa(line)); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return nil, fmt.Errorf("line %d: longer than %d KiB (one server per line)", line+1, maxServerLine>>10)
			}
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no servers (JSON lines: one object per line, or a JSON array of objects)")
	}
	return out, nil
}

// decodeServerArray calls add for every element of a JSON array, with its
// index and line.
func decodeServerArray(data []byte, add func([]byte, string) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	syntax := func(err error) error {
		// The Decoder's offsets are not the input's: the whole input
		// decoded at once says where it is broken.
		var v any
		if uerr := json.Unmarshal(data, &v); uerr != nil {
			err = uerr
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			l, c := position(data, se.Offset)
			return fmt.Errorf("line %d, column %d: %v", l, c, se)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			l, c := position(data, int64(len(data)))
			return fmt.Errorf("line %d, column %d: the input ends inside the array", l, c)
		}
		return err
	}
	if _, err := dec.Token(); err != nil { // '['
		return syntax(err)
	}
	for i := 0; dec.More(); i++ {
		// The element starts after the separator and blanks before it.
		off := dec.InputOffset()
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
			off++
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntax(err)
		}
		l, _ := position(data, off)
		if err := add(raw, fmt.Sprintf("servers[%d] (line %d)", i, l)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		l, c := position(data, dec.InputOffset())
		return fmt.Errorf("line %d, column %d: data after the array", l, c)
	}
	return nil
}

// position is the 1-based line and column of offset in data.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

// checkServer checks what the file gives for one server, naming the field;
// the rest (the server's job spec) is checked with the template.
func checkServer(s *rollout.Server, where string, seen map[string]string) error {
	switch {
	case s.Name == "":
		return fmt.Errorf("%s: name: required", where)
	case len(s.Name) > rollout.MaxServerName || !serverNameRE.MatchString(s.Name):
		return fmt.Errorf("%s: name: %q: use 1-%d letters, digits, '.', '_' or '-', starting and ending with a letter or digit", where, clip(s.Name, 80), rollout.MaxServerName)
	}
	if other, dup := seen[s.Name]; dup {
		return fmt.Errorf("%s: name: %q is the name of %s too", where, s.Name, other)
	}
	seen[s.Name] = where
	if s.BMC == "" {
		return fmt.Errorf("%s: bmc: required (e.g. redfish://10.0.0.5/redfish/v1/Systems/1)", where)
	}
	if _, err := bmc.ParseEndpoint(s.BMC); err != nil {
		// Not the address itself: a mistyped one may carry a password.
		return fmt.Errorf("%s: bmc: %s", where, strings.TrimPrefix(err.Error(), "bmc: "))
	}
	for k, v := range s.Labels {
		switch {
		case k == "":
			return fmt.Errorf("%s: labels: an empty label name", where)
		case len(k) > maxLabelKey:
			return fmt.Errorf("%s: labels: %q: a label name of at most %d bytes", where, clip(k, 80), maxLabelKey)
		case len(v) > maxLabelValue:
			return fmt.Errorf("%s: labels.%s: a value of at most %d bytes", where, k, maxLabelValue)
		}
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// templateBMC stands in for the template's BMC while it is validated: a
// rollout's template names none (each server's job gets its server's).
const templateBMC = "redfish://template.invalid/redfish/v1/Systems/1"

// readTemplate reads -template: a job spec (job.DecodeSpec, strict) without
// "bmc". Errors name the field.
func readTemplate(path string) (job.Spec, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return job.Spec{}, fmt.Errorf("reading -template: %w", err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, job.MaxSpecBytes+1))
	if err != nil {
		return job.Spec{}, fmt.Errorf("reading -template %s: %w", path, err)
	}
	spec, err := decodeTemplate(raw)
	if err != nil {
		return job.Spec{}, fmt.Errorf("-template %s: %w", path, err)
	}
	return spec, nil
}

// decodeTemplate decodes a rollout's job template.
func decodeTemplate(raw []byte) (job.Spec, error) {
	if len(raw) > job.MaxSpecBytes {
		return job.Spec{}, fmt.Errorf("%w: larger than the limit of %d KiB (job.MaxSpecBytes)", job.ErrInvalidSpec, job.MaxSpecBytes>>10)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		// Not a JSON object: the strict decoder says so in the
		// operator's terms.
		if _, err := job.DecodeSpec(raw); err != nil {
			return job.Spec{}, err
		}
		return job.Spec{}, fmt.Errorf("%w: decoding JSON: want an object", job.ErrInvalidSpec)
	}
	if b, ok := fields["bmc"]; ok && string(b) != `""` && string(b) != "null" {
		return job.Spec{}, fmt.Errorf("%w: bmc: a rollout's template names no BMC: each server's comes from -servers", job.ErrInvalidSpec)
	}
	fields["bmc"], _ = json.Marshal(templateBMC)
	raw, _ = json.Marshal(fields)
	spec, err := job.DecodeSpec(raw)
	if err != nil {
		return job.Spec{}, err
	}
	spec.BMC = ""
	return spec, nil
}
