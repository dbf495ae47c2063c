package job

import (
	"bytes"
	"fmt"
	"sync"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/job/internal/legacyrecord"
)

// A stored job record is the JSON of a Job exactly as encoding/json writes
// it (json.Marshal), so any tool reads it with the same struct tags; so are
// the Runner's other records (locks, runner records). They are encoded with
// go-json, a dependency the core already has: the same bytes (checked
// against encoding/json by TestStoredRecordIsEncodingJSON and
// FuzzRecord) at about half encoding/json's CPU per stored task
// (docs/benchmarks.md, "Issue 28: the Runner against the floor, and the
// record format"). The Runner keeps the state of the jobs it runs in
// memory and decodes a record only when another process wrote it (a host's
// Update, another replica's step), also with go-json.
// docs/jobs.md ("Stored records") has the format and its history;
// job/internal/legacyrecord reads records written before it was plain JSON.

// marshalRecord encodes a record: json.Marshal(v)'s bytes.
func marshalRecord(v any) ([]byte, error) { return gojson.Marshal(v) }

// unmarshalRecord decodes a record into v; a *Job written before records
// were plain JSON gets back the task conditions its record left out.
func unmarshalRecord(data []byte, v any) error {
	if err := gojson.Unmarshal(data, v); err != nil {
		return err
	}
	if j, ok := v.(*Job); ok {
		legacyrecord.Restore(j.Status.Tasks, j.Status.StartTime, j.Status.ObservedGeneration)
	}
	return nil
}

// DecodeRecord decodes a job record as a Runner stores it (the value under
// "<KeyPrefix>jobs/<name>"), for hosts that read the Store themselves (a
// dashboard, a migration). A record is the plain JSON of a Job, so
// encoding/json reads it as well; DecodeRecord also restores the task
// conditions that records of earlier versions left out (docs/jobs.md).
func DecodeRecord(data []byte) (*Job, error) {
	var j Job
	if err := unmarshalRecord(data, &j); err != nil {
		return nil, fmt.Errorf("job: decoding a job record: %w", err)
	}
	return &j, nil
}

// encodePooled encodes v (as marshalRecord) into a pooled buffer and calls
// use with the bytes, which are valid only during the call: for writes to a
// Store, which copies the values it is given (storage.Store's contract), so
// the Runner's frequent job writes do not allocate a record each.
func encodePooled(v any, use func([]byte) error) error {
	buf := recBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			recBufs.Put(buf)
		}
	}()
	buf.Reset()
	if err := gojson.NewEncoder(buf).Encode(v); err != nil {
		return err
	}
	b := buf.Bytes()
	return use(b[:len(b)-1]) // Encode ends the value with a newline
}

// recBufs holds record buffers, each with room for a typical job record
// (1-4 KB), so a write neither allocates nor grows one.
var recBufs = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 4<<10)) }}
