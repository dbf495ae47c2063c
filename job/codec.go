package job

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// The Runner's own records (jobs in its Store) are encoded with goccy/go-json:
// the same format and struct tags as encoding/json, measured 3.4x faster
// encoding and 5x faster decoding of a three-task job record, which is most
// of the Runner's cost per task. Outside input (job specs from users) still
// goes through the strict encoding/json decoder (DecodeSpec).
//
// The job record's hot part (the job, its status, conditions and task
// statuses: everything a step changes) is encoded by hand (appendJob): the
// Runner writes it about 6 times per job. With the spec's encoding cached
// per held job (specCache), a finished three-task record takes 1.5 µs and
// no allocation against go-json's 2.7-2.9 µs and a 2.7 KB result
// (BenchmarkCodecMarshal*). appendJob writes the same bytes go-json (and
// encoding/json) write, so records decode exactly as before; the parts a
// step never changes or that are rare (the spec, boot tries) go through
// go-json. Each step worker also keeps the text of the timestamps it wrote
// last (timeCache): with it the fixture record takes 1.5 µs where it took
// 2.5-3.0 µs on the same (busy) machine (BenchmarkCodecMarshalCachedTimes,
// docs/benchmarks.md). Hand-written rather than generated (easyjson,
// ffjson) to keep the core's dependencies to the ones it has. Two guards
// keep it honest: fastCodec is false (and every record goes through go-json)
// when a hand-encoded struct's fields differ from what appendJob knows, and
// TestCodecMatchesGoJSON compares its output byte for byte with go-json's
// on records with every field set.

func marshalRecord(v any) ([]byte, error) {
	switch v := v.(type) {
	case *Job:
		if b, err := appendJob(make([]byte, 0, 1024), v, nil, nil); err == nil {
			return b, nil
		}
	case lockRecord:
		if b, ok := appendLock(make([]byte, 0, 128), &v); ok {
			return b, nil
		}
	}
	return gojson.Marshal(v)
}

// DecodeRecord decodes a job record as a Runner stores it (the value under
// "<KeyPrefix>jobs/<name>"), for hosts that read the Store themselves (a
// dashboard, a migration). Use it rather than encoding/json: a record
// leaves out each task's conditions when they follow from the task's
// other fields (docs/jobs.md), and DecodeRecord puts them back.
func DecodeRecord(data []byte) (*Job, error) {
	var j Job
	if err := unmarshalRecord(data, &j); err != nil {
		return nil, fmt.Errorf("job: decoding a job record: %w", err)
	}
	return &j, nil
}

// unmarshalRecord decodes a record into v; a *Job gets back the task
// conditions its record leaves out (codec_taskconditions.go).
func unmarshalRecord(data []byte, v any) error {
	if !decodeFast(data, v) { // codec_decode.go
		if err := gojson.Unmarshal(data, v); err != nil {
			return err
		}
	}
	if j, ok := v.(*Job); ok {
		restoreTaskConditions(&j.Status)
	}
	return nil
}

// encodePooled encodes v into a pooled buffer and calls use with the bytes,
// which are valid only during the call: for writes to a Store, which copies
// the values it is given (storage.Store's contract), so the Runner's
// frequent job writes do not allocate a record each.
func encodePooled(v any, use func([]byte) error) error {
	return encodeJobPooled(v, nil, use)
}

// recBufs holds record buffers, each with room for a typical job record
// (1-3 KB), so a write neither allocates nor grows one.
var recBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// specCache holds the encoding of one Job's Spec. The Stepper never changes
// a job's Spec, and the Runner replaces the *Job when it reloads a job that
// another writer changed, so the bytes are valid while the pointer is the
// same. Not safe for concurrent use: one held job's steps run one at a time.
type specCache struct {
	j    *Job
	spec []byte
	// times, if not nil, is the timestamp cache of the writes (the
	// step's worker's: see timeCache).
	times *timeCache
}

// encodeJobPooled is encodePooled; for a *Job, its spec's encoding is taken
// from (or stored in) c when c is not nil.
func encodeJobPooled(v any, c *specCache, use func([]byte) error) error {
	bp := recBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			recBufs.Put(bp)
		}
	}()
	if j, ok := v.(*Job); ok && fastCodec {
		var spec []byte
		var tc *timeCache
		if c != nil {
			tc = c.times
			if c.j != j {
				c.j, c.spec = nil, nil
				if enc, err := gojson.Marshal(&j.Spec); err == nil {
					c.j, c.spec = j, enc
				}
			}
			spec = c.spec
		}
		b, err := appendJob((*bp)[:0], j, spec, tc)
		*bp = b[:0] // keep the grown array
		if err == nil {
			return use(b)
		}
	}
	buf := bytes.NewBuffer((*bp)[:0])
	if err := gojson.NewEncoder(buf).Encode(v); err != nil {
		return err
	}
	b := buf.Bytes()
	*bp = b[:0]
	return use(b[:len(b)-1]) // Encode ends the value with a newline
}

// errSlowPath makes appendJob's callers fall back to go-json, which
// encodes the value or returns the error go-json returns for it.
var errSlowPath = errors.New("job: record needs the general encoder")

// appendJob appends j's record: the bytes gojson.Marshal(j) returns. spec,
// when not nil, is j.Spec's encoding.
func appendJob(b []byte, j *Job, spec []byte, tc *timeCache) ([]byte, error) {
	if !fastCodec {
		return b, errSlowPath
	}
	tc.begin()
	var err error
	b = append(b, `{"name":`...)
	b = appendString(b, j.Name)
	if j.Generation != 0 {
		b = append(b, `,"generation":`...)
		b = strconv.AppendInt(b, j.Generation, 10)
	}
	b = append(b, `,"createdAt":`...)
	if b, err = appendTime(b, j.CreatedAt, tc); err != nil {
		return b, err
	}
	if j.CancelRequested {
		b = append(b, `,"cancelRequested":true`...)
	}
	b = append(b, `,"spec":`...)
	if spec != nil {
		b = append(b, spec...)
	} else if b, err = appendGoJSON(b, &j.Spec); err != nil {
		return b, err
	}
	b = append(b, `,"status":`...)
	if b, err = appendStatus(b, &j.Status, tc); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

func appendStatus(b []byte, s *Status, tc *timeCache) ([]byte, error) {
	var err error
	b = append(b, '{')
	if s.ObservedGeneration != 0 {
		b = append(b, `"observedGeneration":`...)
		b = strconv.AppendInt(b, s.ObservedGeneration, 10)
		b = append(b, ',')
	}
	if len(s.Conditions) > 0 {
		b = append(b, `"conditions":`...)
		if b, err = appendConditions(b, s.Conditions, tc); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	b = appendStringField(b, `"result":`, string(s.Result))
	b = appendStringField(b, `"reason":`, s.Reason)
	b = appendStringField(b, `"message":`, s.Message)
	b = append(b, `"currentTask":`...)
	b = strconv.AppendInt(b, int64(s.CurrentTask), 10)
	if len(s.Tasks) > 0 {
		b = append(b, `,"tasks":[`...)
		for i := range s.Tasks {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendTaskStatus(b, &s.Tasks[i], s, tc); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if b, err = appendTimePtrField(b, `,"startTime":`, s.StartTime, tc); err != nil {
		return b, err
	}
	if b, err = appendTimePtrField(b, `,"completionTime":`, s.CompletionTime, tc); err != nil {
		return b, err
	}
	if w := s.Wire; w != nil {
		b = append(b, `,"wire":{"requests":`...)
		b = strconv.AppendInt(b, w.Requests, 10)
		b = append(b, `,"connections":`...)
		b = strconv.AppendInt(b, w.Connections, 10)
		b = append(b, `,"logins":`...)
		b = strconv.AppendInt(b, w.Logins, 10)
		if w.Throttled != 0 {
			b = append(b, `,"throttled":`...)
			b = strconv.AppendInt(b, w.Throttled, 10)
		}
		if w.ThrottleWait != 0 {
			b = append(b, `,"throttleWait":`...)
			b = strconv.AppendInt(b, int64(w.ThrottleWait), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendTaskStatus appends task status s of job status st; its conditions
// are left out when the decoder derives them (codec_taskconditions.go).
func appendTaskStatus(b []byte, s *task.Status, st *Status, tc *timeCache) ([]byte, error) {
	var err error
	start := len(b)
	b = append(b, '{')
	leftOut, derivable := taskConditionsLeftOut(st, s)
	switch {
	case leftOut:
	case len(s.Conditions) == 0 && derivable:
		b = append(b, `"conditions":[],`...)
	case len(s.Conditions) > 0:
		b = append(b, `"conditions":`...)
		if b, err = appendConditions(b, s.Conditions, tc); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	b = appendStringField(b, `"phase":`, string(s.Phase))
	b = appendStringField(b, `"result":`, string(s.Result))
	b = appendStringField(b, `"reason":`, s.Reason)
	b = appendStringField(b, `"message":`, s.Message)
	if s.Attempts != 0 {
		b = append(b, `"attempts":`...)
		b = strconv.AppendInt(b, int64(s.Attempts), 10)
		b = append(b, ',')
	}
	if len(s.BootTries) > 0 {
		b = append(b, `"bootTries":`...)
		if b, err = appendGoJSON(b, s.BootTries); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	for _, f := range [...]struct {
		name string
		t    *timestamp.Time
	}{
		{`"startTime":`, s.StartTime}, {`"requestTime":`, s.RequestTime},
		{`"completionTime":`, s.CompletionTime}, {`"nextAttemptTime":`, s.NextAttemptTime},
	} {
		if f.t != nil {
			b = append(b, f.name...)
			if b, err = appendTime(b, f.t.Time, tc); err != nil {
				return b, err
			}
			b = append(b, ',')
		}
	}
	b = appendStringField(b, `"lastError":`, s.LastError)
	b = appendStringField(b, `"powerState":`, s.PowerState)
	if r := s.BootRestore; r != nil {
		b = append(b, `"bootRestore":{`...)
		if r.Emulated {
			b = append(b, `"emulated":true,`...)
		}
		b = append(b, `"previous":{"device":`...)
		b = appendString(b, r.Previous.Device)
		if r.Previous.Persistent {
			b = append(b, `,"persistent":true`...)
		}
		if r.Previous.Mode != "" {
			b = append(b, `,"mode":`...)
			b = appendString(b, r.Previous.Mode)
		}
		if r.Previous.URI != "" {
			b = append(b, `,"uri":`...)
			b = appendString(b, r.Previous.URI)
		}
		b = append(b, `},"state":`...)
		b = appendString(b, string(r.State))
		if r.Attempts != 0 {
			b = append(b, `,"attempts":`...)
			b = strconv.AppendInt(b, int64(r.Attempts), 10)
		}
		if r.Message != "" {
			b = append(b, `,"message":`...)
			b = appendString(b, r.Message)
		}
		b = append(b, "},"...)
	}
	if t := s.LastResetBefore; t != nil {
		b = append(b, `"lastResetBefore":`...)
		if b, err = appendTime(b, t.Time, tc); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	if len(b) > start+1 {
		b = b[:len(b)-1] // the last field's comma
	}
	return append(b, '}'), nil
}

func appendConditions(b []byte, cs []conditions.Condition, tc *timeCache) ([]byte, error) {
	var err error
	b = append(b, '[')
	for i := range cs {
		c := &cs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendString(b, c.Type)
		b = append(b, `,"status":`...)
		b = appendString(b, string(c.Status))
		if c.ObservedGeneration != 0 {
			b = append(b, `,"observedGeneration":`...)
			b = strconv.AppendInt(b, c.ObservedGeneration, 10)
		}
		b = append(b, `,"lastTransitionTime":`...)
		if b, err = appendTime(b, c.LastTransitionTime.Time, tc); err != nil {
			return b, err
		}
		b = append(b, `,"reason":`...)
		b = appendString(b, c.Reason)
		b = append(b, `,"message":`...)
		b = appendString(b, c.Message)
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendStringField appends name, s and a comma when s is not empty (an
// omitempty string field followed by another field).
func appendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, name...)
	return append(appendString(b, s), ',')
}

func appendTimePtrField(b []byte, name string, t *timestamp.Time, tc *timeCache) ([]byte, error) {
	if t == nil {
		return b, nil
	}
	b = append(b, name...)
	return appendTime(b, t.Time, tc)
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds); a time it refuses (a year outside 0-9999) takes the slow
// path, which returns its error. With tc, t's text is taken from (or kept
// in) tc.
func appendTime(b []byte, t time.Time, tc *timeCache) ([]byte, error) {
	b = append(b, '"')
	if tc != nil {
		var ok bool
		if b, ok = tc.appendCached(b, t); ok {
			return append(b, '"'), nil
		}
	}
	start := len(b)
	b, err := t.AppendText(b)
	if err != nil {
		return b, errSlowPath
	}
	if tc != nil {
		tc.store(t, b[start:])
	}
	return append(b, '"'), nil
}

// timeCache keeps the text of the timestamps of the last record a step
// worker wrote. A record's timestamps (conditions, task and job times) are
// mostly the same from one write to the next (a worker usually runs a
// job's steps one after the other), and formatting them was most of what
// appendJob spent (~2 µs per task). Entries are kept in the order the
// encoder asks for them, so a lookup compares one entry in the common case
// and the few around it (timeWindow) when a field was added or removed
// before it; a record of another job misses after those few. A hit needs
// the same instant in the same zone (UTC, or time.Local as it was when the
// entry was kept), which formats to the same text, so the cache cannot
// change a record's bytes; times in other zones are not cached. Entries
// hold no pointers (the GC does not scan them) and live in a fixed array
// (kept per worker, it never allocates): 24 x 56 bytes. Not safe for
// concurrent use.
type timeCache struct {
	local *time.Location // time.Local when the entries were kept
	n     int            // entries in use
	i     int            // position of the next timestamp in the record being encoded
	ents  [maxTimeTexts]timeText
}

// timeText is one timestamp and its RFC 3339 text (at most 35 bytes:
// "2006-01-02T15:04:05.999999999-07:00").
type timeText struct {
	k    timeKey
	n    uint8
	text [35]byte
}

// timeKey identifies a time's text: its instant and zone (1 UTC, 2 the
// cache's local).
type timeKey struct {
	sec  int64
	nsec int32
	zone uint8
}

// timeWindow is how far from its position a timestamp is looked for: a
// step adds or removes a few timestamps before others (a condition, a
// task's times), and a record of another job matches nothing.
const timeWindow = 4

// maxTimeTexts bounds a timeCache (records with more timestamps encode the
// rest without it). A finished three-task netboot record has about 20.
const maxTimeTexts = 24

// begin starts a record; tc may be nil.
func (tc *timeCache) begin() {
	if tc != nil {
		tc.i = 0
		if l := time.Local; tc.local != l {
			tc.local, tc.n = l, 0
		}
	}
}

// key returns t's key; ok is false for a zone the cache does not keep.
func (tc *timeCache) key(t time.Time) (k timeKey, ok bool) {
	switch t.Location() {
	case time.UTC:
		k.zone = 1
	case tc.local:
		k.zone = 2
	default:
		return k, false
	}
	k.sec, k.nsec = t.Unix(), int32(t.Nanosecond())
	return k, true
}

// appendCached appends t's text to b if tc holds it. It advances the
// position either way, so appendCached and store are called once per
// timestamp.
func (tc *timeCache) appendCached(b []byte, t time.Time) ([]byte, bool) {
	i := tc.i
	k, ok := tc.key(t)
	if !ok {
		return b, false
	}
	if i < tc.n && tc.ents[i].k == k {
		tc.i++
		return append(b, tc.ents[i].text[:tc.ents[i].n]...), true
	}
	for j := max(i-timeWindow, 0); j < min(i+timeWindow+1, tc.n); j++ {
		if tc.ents[j].k == k {
			e := tc.ents[j]
			tc.put(i, &e)
			tc.i++
			return append(b, e.text[:e.n]...), true
		}
	}
	return b, false
}

// store keeps t's text s at the current position (after a lookup missed).
func (tc *timeCache) store(t time.Time, s []byte) {
	if k, ok := tc.key(t); ok && len(s) <= len(timeText{}.text) {
		e := timeText{k: k}
		e.n = uint8(copy(e.text[:], s))
		tc.put(tc.i, &e)
	}
	tc.i++
}

// put keeps e at position i: in place, or appended when i is the end and
// there is room.
func (tc *timeCache) put(i int, e *timeText) {
	switch {
	case i < tc.n:
		tc.ents[i] = *e
	case i == tc.n && i < maxTimeTexts:
		tc.ents[i] = *e
		tc.n++
	}
}

// appendString appends s as a JSON string. Printable ASCII without the
// characters encoding/json escapes (quote, backslash, and <, >, & for HTML
// safety) is copied as it is: every name, reason and state the Runner
// writes. Anything else goes through go-json, which escapes as
// encoding/json does.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			q, err := gojson.Marshal(s)
			if err != nil { // not for a string; keep the encoding valid anyway
				return strconv.AppendQuote(b, strings.ToValidUTF8(s, "\uFFFD"))
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON marks the bytes appendString copies as they are.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

func appendGoJSON(b []byte, v any) ([]byte, error) {
	x, err := gojson.Marshal(v)
	if err != nil {
		return b, errSlowPath
	}
	return append(b, x...), nil
}

// appendLock appends a lock record as go-json encodes it; ok is false when
// it must take the slow path.
func appendLock(b []byte, l *lockRecord) ([]byte, bool) {
	if !fastCodec {
		return b, false
	}
	start := len(b)
	b = append(b, '{')
	b = appendStringField(b, `"holder":`, l.Holder)
	b = appendStringField(b, `"jobs":`, l.Jobs)
	b = appendStringField(b, `"owner":`, l.Owner)
	if l.LeaseMillis != 0 {
		b = append(b, `"leaseMillis":`...)
		b = strconv.AppendInt(b, l.LeaseMillis, 10)
		b = append(b, ',')
	}
	if !l.Expires.IsZero() {
		var err error
		b = append(b, `"expires":`...)
		if b, err = appendTime(b, l.Expires, nil); err != nil {
			return b, false
		}
		b = append(b, ',')
	}
	if len(b) > start+1 {
		b = b[:len(b)-1]
	}
	return append(b, '}'), true
}

// fastCodec is true when the hand-encoded structs have exactly the fields
// (names, types, JSON tags) appendJob and appendLock write. A field added
// without teaching them makes every record take go-json's path (correct,
// slower) and fails TestCodecFieldsKnown.
var fastCodec = codecFieldsKnown() == nil

// codecFields lists, per hand-encoded struct, its fields as
// "Name Type `json tag`", in order.
var codecFields = map[reflect.Type][]string{
	reflect.TypeFor[Job](): {
		"Name string `name`", "Generation int64 `generation,omitempty`", "CreatedAt time.Time `createdAt`",
		"CancelRequested bool `cancelRequested,omitempty`", "Spec job.Spec `spec`", "Status job.Status `status`",
	},
	reflect.TypeFor[Status](): {
		"ObservedGeneration int64 `observedGeneration,omitempty`",
		"Conditions []conditions.Condition `conditions,omitempty`",
		"Result conditions.Result `result,omitempty`", "Reason string `reason,omitempty`",
		"Message string `message,omitempty`", "CurrentTask int `currentTask`",
		"Tasks []task.Status `tasks,omitempty`", "StartTime *timestamp.Time `startTime,omitempty`",
		"CompletionTime *timestamp.Time `completionTime,omitempty`", "Wire *bmc.Stats `wire,omitempty`",
	},
	reflect.TypeFor[task.Status](): {
		"Conditions []conditions.Condition `conditions,omitempty`", "Phase task.Phase `phase,omitempty`",
		"Result conditions.Result `result,omitempty`", "Reason string `reason,omitempty`",
		"Message string `message,omitempty`", "Attempts int `attempts,omitempty`",
		"BootTries []task.BootTry `bootTries,omitempty`", "StartTime *timestamp.Time `startTime,omitempty`",
		"RequestTime *timestamp.Time `requestTime,omitempty`", "CompletionTime *timestamp.Time `completionTime,omitempty`",
		"NextAttemptTime *timestamp.Time `nextAttemptTime,omitempty`", "LastError string `lastError,omitempty`",
		"PowerState string `powerState,omitempty`", "BootRestore *task.BootRestore `bootRestore,omitempty`",
		"LastResetBefore *timestamp.Time `lastResetBefore,omitempty`",
	},
	reflect.TypeFor[task.BootRestore](): {
		"Emulated bool `emulated,omitempty`", "Previous task.BootOverride `previous`",
		"State task.BootRestoreState `state`", "Attempts int `attempts,omitempty`", "Message string `message,omitempty`",
	},
	reflect.TypeFor[task.BootOverride](): {
		"Device string `device`", "Persistent bool `persistent,omitempty`", "Mode string `mode,omitempty`",
		"URI string `uri,omitempty`",
	},
	reflect.TypeFor[conditions.Condition](): {
		"Type string `type`", "Status conditions.Status `status`",
		"ObservedGeneration int64 `observedGeneration,omitempty`",
		"LastTransitionTime timestamp.Time `lastTransitionTime`", "Reason string `reason`", "Message string `message`",
	},
	reflect.TypeFor[bmc.Stats](): {
		"Requests int64 `requests`", "Connections int64 `connections`", "Logins int64 `logins`",
		"Throttled int64 `throttled,omitempty`", "ThrottleWait time.Duration `throttleWait,omitempty`",
	},
	reflect.TypeFor[lockRecord](): {
		"Holder string `holder,omitempty`", "Jobs string `jobs,omitempty`", "Owner string `owner,omitempty`",
		"LeaseMillis int64 `leaseMillis,omitempty`", "Expires time.Time `expires,omitzero`",
	},
}

// codecFieldsKnown returns an error naming the first struct whose fields
// differ from codecFields.
func codecFieldsKnown() error {
	for t, want := range codecFields {
		var got []string
		for i := range t.NumField() {
			f := t.Field(i)
			got = append(got, f.Name+" "+f.Type.String()+" `"+f.Tag.Get("json")+"`")
		}
		if !reflect.DeepEqual(got, want) {
			return errors.New("job: the fields of " + t.String() + " changed: " + strings.Join(got, "; ") +
				"; teach appendJob (job/codec.go) the change and update codecFields")
		}
	}
	return nil
}
