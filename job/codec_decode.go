package job

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"reflect"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// Job records are decoded by hand too (decodeJob): the Runner reads a job
// record on every Get, Wait and List and at the start of every step it
// runs, and go-json was 12-17% of BenchmarkRunner's CPU there (it copies
// its input, decodes through reflect and grows slices as it goes). The
// decoder is hand-written, like appendJob, rather than generated (easyjson,
// ffjson), so that the core keeps the dependencies it has. On the
// benchmark fixture (a finished three-task netboot record) it takes about
// half go-json's time (7-11 µs against 15-17 µs on a busy 2-core machine),
// with 20 allocations and 2.4 KB against 85 and 4.4 KB
// (BenchmarkCodecUnmarshalFast, BenchmarkCodecUnmarshalGoJSON); the Runner
// makes a quarter fewer allocations per task (BenchmarkRunner: 80 -> 60).
//
// It reads exactly what appendJob (and go-json, and encoding/json) write:
// the keys of Job, Spec, task.Spec and its actions, Status, task.Status,
// conditions, task.BootRestore and bmc.Stats, in any order, each at most
// once; strings with or without escapes; integers; true and false;
// RFC 3339 times (through time.Time's own UnmarshalJSON, which go-json
// calls for time.Time and timestamp.Time, so zones and locations come out
// the same) and durations (through time.ParseDuration, as
// task.Duration's UnmarshalJSON does for a string). The rare parts of a
// record (a task's boot tries, a waitForBoot action) are handed to
// go-json as their sub-slice.
//
// The fallback rule: anything else (an unknown key, a repeated key, a key
// with an escape or outside ASCII, null, a number with a fraction or an
// exponent or out of range, a string with invalid UTF-8 or a lone
// surrogate, a time UnmarshalJSON refuses, a duration that is not a plain
// string, invalid JSON, a destination that is not the zero Job, any type
// other than *Job) makes the fast path decline, and unmarshalRecord
// decodes the whole record with go-json, which then does and returns what
// it always did. A field added to one of these structs therefore falls
// back whenever a record has it (its key is unknown here) - the decoder
// declines unknown keys rather than extending TestCodecFieldsKnown. What
// declining cannot catch (a renamed JSON key, a changed field type) turns
// the fast path off: fastDecode needs fastCodec (codecFields,
// TestCodecFieldsKnown) and decodeFields, which lists the spec structs
// decodeJob fills (TestDecodeFieldsKnown).
//
// The guard is differential: FuzzRecordDecode (codec_decode_test.go)
// decodes any input both ways and fails when the fast path accepts what
// go-json refuses or decodes it to a value that is not reflect.DeepEqual
// to go-json's; its seeds are the encoder's records of jobs with every
// field set, of real job states and hand-mutated ones.
// TestRecordDecodeStates checks that the records of real job states
// (queued, running, succeeded, failed, canceled, wait-for-boot with boot
// tries and a boot restore record, virtual media) take the fast path.
//
// jobHead (the scheduler's partial decode) stays with go-json: a strict
// hand-written head decoder, which must validate the parts it skips, took
// about twice go-json's time, whose skipping does not validate.
//
// Strings are copied out of the input field by field (the Runner hands in
// pooled buffers that are reused after the call, so nothing may point into
// the input); the values every record repeats (condition types and
// statuses, results, phases) are interned and a string equal to one of the
// last few is shared, so they cost no allocation. Substrings of one
// conversion of the whole record would save 6 of the 20 allocations but
// keep a second copy of the record (~2.5 KB) alive with every decoded job.

// fastDecode is true when the structs decodeJob fills have the fields
// (names, types, JSON keys) it knows.
var fastDecode = fastCodec && decodeFieldsKnown() == nil

// errDecline makes unmarshalRecord decode the record with go-json.
var errDecline = errors.New("job: record needs the general decoder")

// decodeFast decodes data into v when v is a zero *Job and the record is
// one decodeJob reads; otherwise it returns false and leaves v as it was.
func decodeFast(data []byte, v any) bool {
	if !fastDecode {
		return false
	}
	switch v := v.(type) {
	case *Job:
		if !isZeroJob(v) {
			return false
		}
		if decodeJob(data, v) != nil {
			*v = Job{}
			return false
		}
		return true
	}
	return false
}

// isZeroJob reports whether j is the zero Job (what the Runner decodes
// into): go-json merges a record into what is there, decodeJob does not.
// (The fields are the ones codecFields and decodeFields list.)
func isZeroJob(j *Job) bool {
	s, st := &j.Spec, &j.Status
	return j.Name == "" && j.Generation == 0 && j.CreatedAt == (time.Time{}) && !j.CancelRequested &&
		s.BMC == "" && s.CredentialsRef == "" && s.SystemUUID == "" && s.Tasks == nil && s.Timeout.Duration == 0 &&
		st.ObservedGeneration == 0 && st.Conditions == nil && st.Result == "" && st.Reason == "" && st.Message == "" &&
		st.CurrentTask == 0 && st.Tasks == nil && st.StartTime == nil && st.CompletionTime == nil && st.Wire == nil
}

// decodeJob decodes a job record into the zero j.
func decodeJob(data []byte, j *Job) error {
	d := recDecoder{b: data}
	d.job(j)
	return d.end()
}

// recDecoder reads one record. A failure is sticky: every read after it
// returns zero values and ends loops, and end reports it.
type recDecoder struct {
	b      []byte
	i      int
	bad    bool
	ntasks int // the spec's tasks: the size of the status's

	// times holds the last times read, by their text (a slice of b): a
	// record repeats most of its timestamps (a condition pair's, a
	// task's), and equal text parses to the same time.
	times [4]struct {
		raw []byte
		t   time.Time
	}
	nextTime int
	// strs holds the last strings allocated: a job's message repeats in
	// its conditions.
	strs    [4]string
	nextStr int
	// stamps is what is left of a block of timestamps that timePtr hands
	// out one at a time (one allocation for a record's *timestamp.Time
	// fields).
	stamps []timestamp.Time
}

func (d *recDecoder) fail() { d.bad, d.i = true, len(d.b) }

// end checks that the record ended cleanly.
func (d *recDecoder) end() error {
	d.ws()
	if d.bad || d.i != len(d.b) {
		return errDecline
	}
	return nil
}

func (d *recDecoder) ws() {
	if d.i < len(d.b) && d.b[d.i] > ' ' {
		return
	}
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space (0 at the end).
func (d *recDecoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *recDecoder) expect(c byte) {
	if d.peek() != c {
		d.fail()
		return
	}
	d.i++
}

// open consumes an object's '{'.
func (d *recDecoder) open() { d.expect('{') }

// key returns the next key of an object whose '{' was consumed and n of
// whose fields were read, with its ':' consumed; ok is false at the
// object's '}' (consumed) and after a failure. A key with an escape, a
// control character or a byte outside ASCII fails (go-json matches keys
// without regard to case, with Unicode folding).
func (d *recDecoder) key(n int) (k []byte, ok bool) {
	if d.bad {
		return nil, false
	}
	switch d.peek() {
	case '}':
		d.i++
		return nil, false
	case ',':
		if n == 0 {
			d.fail()
			return nil, false
		}
		d.i++
		d.ws()
	default:
		if n > 0 {
			d.fail()
			return nil, false
		}
	}
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		d.fail()
		return nil, false
	}
	start := d.i + 1
	end := start
	for end+8 <= len(d.b) {
		if m := specialBytes(binary.LittleEndian.Uint64(d.b[end:])); m != 0 {
			end += bits.TrailingZeros64(m) / 8
			break
		}
		end += 8
	}
	for end < len(d.b) && !special[d.b[end]] {
		end++
	}
	if end >= len(d.b) || d.b[end] != '"' {
		d.fail() // an escape, a control character or not ASCII
		return nil, false
	}
	k = d.b[start:end]
	d.i = end + 1
	if d.i < len(d.b) && d.b[d.i] == ':' {
		d.i++
	} else {
		d.expect(':')
	}
	return k, !d.bad
}

// special marks the bytes specialBytes finds.
var special = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80
	}
	return t
}()

// once marks field bit of an object as read; a repeated key fails.
func (d *recDecoder) once(seen *uint32, bit uint) {
	if *seen&(1<<bit) != 0 {
		d.fail()
	}
	*seen |= 1 << bit
}

// arr consumes an array's '['.
func (d *recDecoder) arr() { d.expect('[') }

// more reports whether the array whose '[' was consumed and n of whose
// elements were read has another element (consuming its ','); at ']' it
// consumes it and returns false.
func (d *recDecoder) more(n int) bool {
	if d.bad {
		return false
	}
	switch d.peek() {
	case ']':
		d.i++
		return false
	case ',':
		if n == 0 {
			d.fail()
			return false
		}
		d.i++
		return true
	}
	if n > 0 {
		d.fail()
		return false
	}
	return true
}

// rawString reads a string and returns its bytes between the quotes, still
// escaped; esc tells whether they hold a backslash, ascii whether they are
// all ASCII.
func (d *recDecoder) rawString() (raw []byte, esc, ascii bool) {
	if d.peek() != '"' {
		d.fail()
		return nil, false, false
	}
	start := d.i + 1
	ascii = true
	for i := start; i < len(d.b); {
		// Eight bytes at a time while none is special.
		for i+8 <= len(d.b) {
			if m := specialBytes(binary.LittleEndian.Uint64(d.b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(d.b) {
			break
		}
		switch c := d.b[i]; {
		case c == '"':
			d.i = i + 1
			return d.b[start:i], esc, ascii
		case c == '\\':
			esc = true
			i += 2 // the escaped byte (a quote does not end the string)
		case c < 0x20:
			d.fail()
			return nil, false, false
		case c >= 0x80:
			ascii = false
			i++
		default:
			i++
		}
	}
	d.fail()
	return nil, false, false
}

// specialBytes returns a mask with the high bit set of the first byte of w
// (little endian) that is a quote, a backslash, a control character or not
// ASCII, and possibly of bytes after it; 0 if there is none.
func specialBytes(w uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := w ^ (lo * '"')
	b := w ^ (lo * '\\')
	return ((q-lo)&^q | (b-lo)&^b | (w-lo*0x20)&^w | w) & hi
}

// str reads a string value.
func (d *recDecoder) str() string {
	raw, esc, ascii := d.rawString()
	if d.bad {
		return ""
	}
	if !esc {
		if !ascii && !utf8.Valid(raw) {
			d.fail() // go-json replaces invalid bytes with U+FFFD
			return ""
		}
		return d.string(raw)
	}
	s, ok := unescape(raw)
	if !ok {
		d.fail()
	}
	return s
}

// string returns b as a string: an interned one, one of the last few
// returned, or a new one.
func (d *recDecoder) string(b []byte) string {
	if s, ok := interned(b); ok {
		return s
	}
	for _, s := range d.strs {
		if s == string(b) {
			return s
		}
	}
	s := string(b)
	d.strs[d.nextStr%len(d.strs)] = s
	d.nextStr++
	return s
}

// skipString validates a string value without keeping it.
func (d *recDecoder) skipString() {
	raw, esc, ascii := d.rawString()
	if d.bad {
		return
	}
	if esc {
		if _, ok := unescape(raw); !ok {
			d.fail()
		}
	} else if !ascii && !utf8.Valid(raw) {
		d.fail()
	}
}

// unescape decodes the contents of a JSON string with escapes; ok is false
// for a malformed escape, invalid UTF-8 or a lone surrogate (which go-json
// turns into U+FFFD).
func unescape(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			if c < utf8.RuneSelf {
				out = append(out, c)
				i++
				continue
			}
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				return "", false
			}
			out = append(out, raw[i:i+n]...)
			i += n
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
					return "", false
				}
				r2, ok := hex4(raw[i+2:])
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// interned returns b as a string without allocating if it is one of the
// values records repeat.
func interned(b []byte) (string, bool) {
	switch string(b) {
	case "":
		return "", true
	case "True":
		return "True", true
	case "False":
		return "False", true
	case "Unknown":
		return "Unknown", true
	case "Completed":
		return "Completed", true
	case "Running":
		return "Running", true
	case "Succeeded":
		return "Succeeded", true
	case "Failed":
		return "Failed", true
	case "Canceled":
		return "Canceled", true
	case "Pending":
		return "Pending", true
	case "Started":
		return "Started", true
	case "Requested":
		return "Requested", true
	case "Done":
		return "Done", true
	case "TimedOut":
		return "TimedOut", true
	case "On":
		return "On", true
	case "Off":
		return "Off", true
	case "on":
		return "on", true
	case "off":
		return "off", true
	case "Queued":
		return "Queued", true
	case "power is On":
		return "power is On", true
	case "power is Off":
		return "power is Off", true
	}
	return "", false
}

// integer reads an integer that fits in an int64; a fraction or an
// exponent fails.
func (d *recDecoder) integer() int64 {
	d.ws()
	i := d.i
	neg := i < len(d.b) && d.b[i] == '-'
	if neg {
		i++
	}
	start := i
	var v uint64
	for ; i < len(d.b) && '0' <= d.b[i] && d.b[i] <= '9'; i++ {
		if v > (1<<63)/10 {
			d.fail()
			return 0
		}
		v = v*10 + uint64(d.b[i]-'0')
	}
	n := i - start
	if n == 0 || n > 1 && d.b[start] == '0' || v > 1<<63 || v == 1<<63 && !neg {
		d.fail()
		return 0
	}
	if i < len(d.b) {
		switch d.b[i] {
		case '.', 'e', 'E':
			d.fail()
			return 0
		}
	}
	d.i = i
	if neg {
		return -int64(v)
	}
	return int64(v)
}

// integerInt reads an integer into an int.
func (d *recDecoder) integerInt() int {
	v := d.integer()
	if int64(int(v)) != v {
		d.fail()
	}
	return int(v)
}

// boolean reads true or false.
func (d *recDecoder) boolean() bool {
	switch d.peek() {
	case 't':
		if d.lit("true") {
			return true
		}
	case 'f':
		if d.lit("false") {
			return false
		}
	}
	d.fail()
	return false
}

func (d *recDecoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// time reads a time into t with time.Time's UnmarshalJSON (what go-json
// calls for time.Time and timestamp.Time).
func (d *recDecoder) time(t *time.Time) {
	d.ws()
	start := d.i
	d.rawString()
	if d.bad {
		return
	}
	raw := d.b[start:d.i]
	for k := range d.times {
		if c := &d.times[k]; c.raw != nil && bytes.Equal(c.raw, raw) {
			*t = c.t
			return
		}
	}
	if t.UnmarshalJSON(raw) != nil {
		d.fail()
		return
	}
	c := &d.times[d.nextTime%len(d.times)]
	c.raw, c.t = raw, *t
	d.nextTime++
}

// timePtr reads a time into a new timestamp.Time.
func (d *recDecoder) timePtr() *timestamp.Time {
	if len(d.stamps) == 0 {
		d.stamps = make([]timestamp.Time, min(4*d.ntasks+2, 64))
	}
	t := &d.stamps[0]
	d.time(&t.Time)
	if d.bad {
		return nil
	}
	d.stamps = d.stamps[1:]
	return t
}

// duration reads a task.Duration written as a string, as its UnmarshalJSON
// does.
func (d *recDecoder) duration() task.Duration {
	raw, esc, ascii := d.rawString()
	if d.bad || esc || !ascii {
		d.fail()
		return task.Duration{}
	}
	v, err := time.ParseDuration(string(raw))
	if err != nil {
		d.fail()
	}
	return task.Duration{Duration: v}
}

// skip validates any JSON value and returns its bytes.
func (d *recDecoder) skip() []byte {
	d.ws()
	start := d.i
	d.skipValue(0)
	if d.bad {
		return nil
	}
	return d.b[start:d.i]
}

func (d *recDecoder) skipValue(depth int) {
	if depth > 64 {
		d.fail()
		return
	}
	switch c := d.peek(); {
	case c == '{':
		d.i++
		for n := 0; ; n++ {
			if _, ok := d.key(n); !ok {
				return
			}
			d.skipValue(depth + 1)
		}
	case c == '[':
		d.i++
		for n := 0; d.more(n); n++ {
			d.skipValue(depth + 1)
		}
	case c == '"':
		d.skipString()
	case c == 't' || c == 'f':
		d.boolean()
	case c == '-' || '0' <= c && c <= '9':
		d.integer() // integers only: no record has another number
	default:
		d.fail() // null, a bad byte or the end
	}
}

// goJSON decodes the next value into v with go-json.
func (d *recDecoder) goJSON(v any) {
	if raw := d.skip(); !d.bad && gojson.Unmarshal(raw, v) != nil {
		d.fail()
	}
}

func (d *recDecoder) job(j *Job) {
	var seen uint32
	d.open()
	for n := 0; ; n++ {
		k, ok := d.key(n)
		if !ok {
			return
		}
		switch string(k) {
		case "name":
			d.once(&seen, 0)
			j.Name = d.str()
		case "generation":
			d.once(&seen, 1)
			j.Generation = d.integer()
		case "createdAt":
			d.once(&seen, 2)
			d.time(&j.CreatedAt)
		case "cancelRequested":
			d.once(&seen, 3)
			j.CancelRequested = d.boolean()
		case "spec":
			d.once(&seen, 4)
			d.spec(&j.Spec)
		case "status":
			d.once(&seen, 5)
			d.status(&j.Status)
		default:
			d.fail()
		}
	}
}

func (d *recDecoder) spec(s *Spec) {
	var seen uint32
	d.open()
	for n := 0; ; n++ {
		k, ok := d.key(n)
		if !ok {
			return
		}
		switch string(k) {
		case "bmc":
			d.once(&seen, 0)
			s.BMC = d.str()
		case "credentialsRef":
			d.once(&seen, 1)
			s.CredentialsRef = d.str()
		case "systemUUID":
			d.once(&seen, 2)
			s.SystemUUID = d.str()
		case "tasks":
			d.once(&seen, 3)
			ts := make([]task.Spec, 0, 4)
			d.arr()
			for i := 0; d.more(i); i++ {
				ts = append(ts, task.Spec{})
				d.taskSpec(&ts[i])
			}
			s.Tasks = ts
			d.ntasks = len(ts)
		case "timeout":
			d.once(&seen, 4)
			s.Timeout = d.duration()
		default:
			d.fail()
		}
	}
}

func (d *recDecoder) taskSpec(s *task.Spec) {
	var seen uint32
	d.open()
	for n := 0; ; n++ {
		k, ok := d.key(n)
		if !ok {
			return
		}
		switch string(k) {
		case "name":
			d.once(&seen, 0)
			s.Name = d.str()
		case "power":
			d.once(&seen, 1)
			a := new(task.PowerAction)
			d.fields(func(k []byte) bool {
				if string(k) == "op" {
					a.Op = task.PowerOp(d.str())
					return true
				}
				return false
			})
			s.Power = a
		case "powerStatus":
			d.once(&seen, 2)
			d.fields(func([]byte) bool { return false })
			s.PowerStatus = new(task.PowerStatusAction)
		case "reachable":
			d.once(&seen, 3)
			d.fields(func([]byte) bool { return false })
			s.Reachable = new(task.ReachableAction)
		case "bootDevice":
			d.once(&seen, 4)
			a := new(task.BootDeviceAction)
			d.fields(func(k []byte) bool {
				switch string(k) {
				case "device":
					a.Device = task.BootDevice(d.str())
				case "persistent":
					a.Persistent = d.boolean()
				case "mode":
					a.Mode = task.BootMode(d.str())
				case "uri":
					a.URI = d.str()
				case "emulateOnce":
					e := d.boolean()
					a.EmulateOnce = &e
				default:
					return false
				}
				return true
			})
			s.BootDevice = a
		case "virtualMedia":
			d.once(&seen, 5)
			a := new(task.VirtualMediaAction)
			d.fields(func(k []byte) bool {
				switch string(k) {
				case "kind":
					a.Kind = task.MediaKind(d.str())
				case "imageURL":
					a.ImageURL = d.str()
				case "eject":
					a.Eject = d.boolean()
				default:
					return false
				}
				return true
			})
			s.VirtualMedia = a
		case "bmcReset":
			d.once(&seen, 6)
			a := new(task.BMCResetAction)
			d.fields(func(k []byte) bool {
				if string(k) == "type" {
					a.Type = task.BMCResetType(d.str())
					return true
				}
				return false
			})
			s.BMCReset = a
		case "waitForBoot":
			d.once(&seen, 7)
			a := new(task.WaitForBootAction)
			d.goJSON(a)
			s.WaitForBoot = a
		case "timeout":
			d.once(&seen, 8)
			s.Timeout = d.duration()
		default:
			d.fail()
		}
	}
}

// fields reads a small object: field is called with each key and reads its
// value, or returns false for a key it does not know. A repeated key
// fails.
func (d *recDecoder) fields(field func(k []byte) bool) {
	var keys [8][]byte
	d.open()
	for n := 0; ; n++ {
		k, ok := d.key(n)
		if !ok {
			return
		}
		if n >= len(keys) {
			d.fail()
			return
		}
		for _, prev := range keys[:n] {
			if string(prev) == string(k) {
				d.fail()
				return
			}
		}
		keys[n] = k
		if !field(k) {
			d.fail()
			return
		}
	}
}

func (d *recDecoder) status(s *Status) {
	var seen uint32
	d.open()
	for n := 0; ; n++ {
		k, ok := d.key(n)
		if !ok {
			return
		}
		switch string(k) {
		case "observedGeneration":
			d.once(&seen, 0)
			s.ObservedGeneration = d.integer()
		case "conditions":
			d.once(&seen, 1)
			s.Conditions = d.conditions()
		case "result":
			d.once(&seen, 2)
			s.Result = conditions.Result(d.str())
		case "reason":
			d.once(&seen, 3)
			s.Reason = d.str()
		case "message":
			d.once(&seen, 4)
			s.Message = d.str()
		case "currentTask":
			d.once(&seen, 5)
			s.CurrentTask = d.integerInt()
		case "tasks":
			d.once(&seen, 6)
			// One status per spec task (the spec comes first).
			ts := make([]task.Status, 0, max(d.ntasks, 1))
			d.arr()
			for i := 0; d.more(i); i++ {
				ts = append(ts, task.Status{})
				d.taskStatus(&ts[i])
			}
			s.Tasks = ts
		case "startTime":
			d.once(&seen, 7)
			s.StartTime = d.timePtr()
		case "completionTime":
			d.once(&seen, 8)
			s.CompletionTime = d.timePtr()
		case "wire":
			d.once(&seen, 9)
			w := new(bmc.Stats)
			d.fields(func(k []byte) bool {
				switch string(k) {
				case "requests":
					w.Requests = d.integer()
				case "connections":
					w.Connections = d.integer()
				case "logins":
					w.Logins = d.integer()
				case "throttled":
					w.Throttled = d.integer()
				case "throttleWait":
					w.ThrottleWait = time.Duration(d.integer())
				default:
					return false
				}
				return true
			})
			s.Wire = w
		default:
			d.fail()
		}
	}
}

func (d *recDecoder) conditions() []conditions.Condition {
	cs := make([]conditions.Condition, 0, 2) // Completed and Running
	d.arr()
	for i := 0; d.more(i); i++ {
		cs = append(cs, conditions.Condition{})
		c := &cs[i]
		var seen uint32
		d.open()
		for n := 0; ; n++ {
			k, ok := d.key(n)
			if !ok {
				break
			}
			switch string(k) {
			case "type":
				d.once(&seen, 0)
				c.Type = d.str()
			case "status":
				d.once(&seen, 1)
				c.Status = conditions.Status(d.str())
			case "observedGeneration":
				d.once(&seen, 2)
				c.ObservedGeneration = d.integer()
			case "lastTransitionTime":
				d.once(&seen, 3)
				d.time(&c.LastTransitionTime.Time)
			case "reason":
				d.once(&seen, 4)
				c.Reason = d.str()
			case "message":
				d.once(&seen, 5)
				c.Message = d.str()
			default:
				d.fail()
			}
		}
	}
	return cs
}

func (d *recDecoder) taskStatus(s *task.Status) {
	var seen uint32
	d.open()
	for n := 0; ; n++ {
		k, ok := d.key(n)
		if !ok {
			return
		}
		switch string(k) {
		case "conditions":
			d.once(&seen, 0)
			s.Conditions = d.conditions()
		case "phase":
			d.once(&seen, 1)
			s.Phase = task.Phase(d.str())
		case "result":
			d.once(&seen, 2)
			s.Result = conditions.Result(d.str())
		case "reason":
			d.once(&seen, 3)
			s.Reason = d.str()
		case "message":
			d.once(&seen, 4)
			s.Message = d.str()
		case "attempts":
			d.once(&seen, 5)
			s.Attempts = d.integerInt()
		case "bootTries":
			d.once(&seen, 6)
			d.goJSON(&s.BootTries)
		case "startTime":
			d.once(&seen, 7)
			s.StartTime = d.timePtr()
		case "requestTime":
			d.once(&seen, 8)
			s.RequestTime = d.timePtr()
		case "completionTime":
			d.once(&seen, 9)
			s.CompletionTime = d.timePtr()
		case "nextAttemptTime":
			d.once(&seen, 10)
			s.NextAttemptTime = d.timePtr()
		case "lastError":
			d.once(&seen, 11)
			s.LastError = d.str()
		case "powerState":
			d.once(&seen, 12)
			s.PowerState = d.str()
		case "bootRestore":
			d.once(&seen, 13)
			r := new(task.BootRestore)
			d.fields(func(k []byte) bool {
				switch string(k) {
				case "emulated":
					r.Emulated = d.boolean()
				case "previous":
					p := &r.Previous
					d.fields(func(k []byte) bool {
						switch string(k) {
						case "device":
							p.Device = d.str()
						case "persistent":
							p.Persistent = d.boolean()
						case "mode":
							p.Mode = d.str()
						case "uri":
							p.URI = d.str()
						default:
							return false
						}
						return true
					})
				case "state":
					r.State = task.BootRestoreState(d.str())
				case "attempts":
					r.Attempts = d.integerInt()
				case "message":
					r.Message = d.str()
				default:
					return false
				}
				return true
			})
			s.BootRestore = r
		case "lastResetBefore":
			d.once(&seen, 14)
			s.LastResetBefore = d.timePtr()
		default:
			d.fail()
		}
	}
}

// decodeFields lists, per struct decodeJob fills by hand beyond
// codecFields, its fields as "Name Type `json tag`", in order.
var decodeFields = map[reflect.Type][]string{
	reflect.TypeFor[Spec](): {
		"BMC string `bmc`", "CredentialsRef string `credentialsRef,omitempty`",
		"SystemUUID string `systemUUID,omitempty`", "Tasks []task.Spec `tasks`", "Timeout task.Duration `timeout,omitzero`",
	},
	reflect.TypeFor[task.Spec](): {
		"Name string `name,omitempty`", "Power *task.PowerAction `power,omitempty`",
		"PowerStatus *task.PowerStatusAction `powerStatus,omitempty`", "Reachable *task.ReachableAction `reachable,omitempty`",
		"BootDevice *task.BootDeviceAction `bootDevice,omitempty`",
		"VirtualMedia *task.VirtualMediaAction `virtualMedia,omitempty`",
		"BMCReset *task.BMCResetAction `bmcReset,omitempty`", "WaitForBoot *task.WaitForBootAction `waitForBoot,omitempty`",
		"Timeout task.Duration `timeout,omitzero`",
	},
	reflect.TypeFor[task.PowerAction]():       {"Op task.PowerOp `op`"},
	reflect.TypeFor[task.PowerStatusAction](): nil,
	reflect.TypeFor[task.ReachableAction]():   nil,
	reflect.TypeFor[task.BootDeviceAction](): {
		"Device task.BootDevice `device`", "Persistent bool `persistent,omitempty`", "Mode task.BootMode `mode,omitempty`",
		"URI string `uri,omitempty`", "EmulateOnce *bool `emulateOnce,omitempty`",
	},
	reflect.TypeFor[task.VirtualMediaAction](): {
		"Kind task.MediaKind `kind,omitempty`", "ImageURL string `imageURL,omitempty`", "Eject bool `eject,omitempty`",
	},
	reflect.TypeFor[task.BMCResetAction](): {"Type task.BMCResetType `type`"},
	reflect.TypeFor[task.Duration]():       {"Duration time.Duration ``"},
}

// decodeFieldsKnown returns an error naming the first struct whose fields
// differ from decodeFields.
func decodeFieldsKnown() error {
	for t, want := range decodeFields {
		var got []string
		for i := range t.NumField() {
			f := t.Field(i)
			got = append(got, f.Name+" "+f.Type.String()+" `"+f.Tag.Get("json")+"`")
		}
		if !reflect.DeepEqual(got, want) {
			return errors.New("job: the fields of " + t.String() + " changed: " + strings.Join(got, "; ") +
				"; teach decodeJob (job/codec_decode.go) the change and update decodeFields")
		}
	}
	return nil
}
