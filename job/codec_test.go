package job

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

// TestCodecFieldsKnown fails when a field was added to (or changed in) a
// struct that appendJob or appendLock encode by hand: until they learn it,
// every record takes go-json's slower path.
func TestCodecFieldsKnown(t *testing.T) {
	if err := codecFieldsKnown(); err != nil {
		t.Fatal(err)
	}
	if !fastCodec {
		t.Fatal("fastCodec is false")
	}
}

// codecStrings are the strings fillRandom picks from: plain ones and ones
// every escaping rule of encoding/json applies to.
var codecStrings = []string{
	"", "a", "Succeeded", "power is Off", `quote " and \ backslash`, "<html> & co",
	"tab\tnew\nline\x00\x1f", "é ünïcode ✓", "bad utf8 \xff\xfe", "line sep \u2028 \u2029", "\x7f del",
}

// fillRandom sets the exported fields of v from r: each is left zero with
// probability zeroP, so every omitempty and comma case is reached.
func fillRandom(r *rand.Rand, v reflect.Value, zeroP float64, depth int) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		ts := []time.Time{
			time.Date(2026, 12, 1, 5, 0, 9, 0, time.UTC),
			time.Date(2026, 12, 1, 5, 0, 9, 123456789, time.UTC),
			time.Date(2026, 12, 1, 5, 0, 9, 120000000, time.FixedZone("x", 3600+1800)),
			time.Unix(1700000000, 5).In(time.FixedZone("y", -7*3600)),
		}
		v.Set(reflect.ValueOf(ts[r.Intn(len(ts))]))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(codecStrings[r.Intn(len(codecStrings))])
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(r.Int63n(1<<40) - 1<<20)
	case reflect.Pointer:
		if depth > 8 {
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem(), zeroP, depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 8 {
			return
		}
		n := r.Intn(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRandom(r, s.Index(i), zeroP, depth+1)
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() || r.Float64() < zeroP {
				continue
			}
			fillRandom(r, v.Field(i), zeroP, depth+1)
		}
	}
}

// TestCodecMatchesGoJSON: the hand encoder writes exactly go-json's bytes
// (so stored records decode as before), for the benchmark fixture, a zero
// job, and random jobs and lock records with every field set or left zero.
// Task conditions are written out here (writeAllTaskConditions set), as go-json
// writes them; TestTaskConditionsLeftOut* cover leaving them out.
func TestCodecMatchesGoJSON(t *testing.T) {
	writeTaskConditions(t)
	var fixture Job
	if err := json.Unmarshal([]byte(codecFixture), &fixture); err != nil {
		t.Fatal(err)
	}
	jobs := []*Job{&fixture, {}}
	r := rand.New(rand.NewSource(1))
	for i := range 400 {
		var j Job
		fillRandom(r, reflect.ValueOf(&j).Elem(), float64(i%5)/5, 0)
		jobs = append(jobs, &j)
	}
	for i, j := range jobs {
		want, err := gojson.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJob(nil, j, nil, nil)
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("job %d:\n got  %s\n want %s", i, got, want)
		}
		var c specCache
		var viaPool []byte
		if err := encodeJobPooled(j, &c, func(b []byte) error { viaPool = append([]byte(nil), b...); return nil }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(viaPool, want) {
			t.Fatalf("job %d, pooled with spec cache:\n got  %s\n want %s", i, viaPool, want)
		}
		// What encoding/json writes decodes to the same job.
		std, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		var a, b Job
		if err := unmarshalRecord(std, &a); err != nil {
			t.Fatal(err)
		}
		if err := unmarshalRecord(got, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("job %d decodes differently from encoding/json's record", i)
		}
	}
	for i := range 200 {
		var l lockRecord
		fillRandom(r, reflect.ValueOf(&l).Elem(), float64(i%5)/5, 0)
		want, err := gojson.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendLock(nil, &l)
		if !ok {
			t.Fatalf("lock %d: slow path", i)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("lock %d:\n got  %s\n want %s", i, got, want)
		}
	}
}

// TestCodecSlowPath: a time encoding/json refuses makes the record's
// encoding fail as before, not write an invalid record.
func TestCodecSlowPath(t *testing.T) {
	j := &Job{Name: "x", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := marshalRecord(j); err == nil {
		t.Fatal("a year-10000 time encoded")
	}
	if err := encodePooled(j, func([]byte) error { return nil }); err == nil {
		t.Fatal("a year-10000 time encoded (pooled)")
	}
	if err := encodeJobPooled(j, &specCache{}, func([]byte) error { return nil }); err == nil {
		t.Fatal("a year-10000 time encoded (spec cache)")
	}
}

// FuzzCodecString: appendString writes what go-json writes for any string.
func FuzzCodecString(f *testing.F) {
	for _, s := range codecStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := gojson.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("got %s want %s", got, want)
		}
	})
}

// BenchmarkCodecMarshalCachedSpec encodes the fixture job as the Runner's
// persister does: by hand, with the spec's encoding cached for the held job
// (go test -run '^$' -bench Codec ./job; BenchmarkCodecMarshal encodes the
// spec each time).
func BenchmarkCodecMarshalCachedSpec(b *testing.B) {
	j := codecFixtureJob(b)
	var c specCache
	b.ReportAllocs()
	for b.Loop() {
		if err := encodeJobPooled(j, &c, func([]byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecMarshalCachedTimes is BenchmarkCodecMarshalCachedSpec with
// a step worker's timestamp cache as well, the record unchanged between
// writes: the upper bound of what timeCache saves (a step's second write
// has one to three new timestamps).
func BenchmarkCodecMarshalCachedTimes(b *testing.B) {
	j := codecFixtureJob(b)
	c := specCache{times: new(timeCache)}
	b.ReportAllocs()
	for b.Loop() {
		if err := encodeJobPooled(j, &c, func([]byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecMarshalGoJSON encodes the fixture job with go-json alone,
// as the Runner did before appendJob.
func BenchmarkCodecMarshalGoJSON(b *testing.B) {
	j := codecFixtureJob(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gojson.Marshal(j); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCodecTimeCache: with one timeCache kept across writes, as the Runner
// keeps one per step worker, records still encode exactly as go-json does:
// when the same job is written again, when timestamps are added before
// others (shifting their positions), changed, or removed, and when the
// cache goes on to unrelated jobs whose times differ or repeat in another
// order.
func TestCodecTimeCache(t *testing.T) {
	writeTaskConditions(t)
	r := rand.New(rand.NewSource(2))
	c := specCache{times: new(timeCache)}
	check := func(step string, j *Job) {
		t.Helper()
		want, err := gojson.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		if err := encodeJobPooled(j, &c, func(b []byte) error { got = append([]byte(nil), b...); return nil }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got  %s\n want %s", step, got, want)
		}
	}
	for i := range 200 {
		var j Job
		fillRandom(r, reflect.ValueOf(&j).Elem(), float64(i%5)/5, 0)
		check("first write", &j)
		check("same record again", &j)
		// A condition added in front shifts every later timestamp.
		j.Status.Conditions = append([]conditions.Condition{{Type: "Added", Status: "True",
			LastTransitionTime: timestamp.New(time.Unix(int64(i), int64(i)).UTC())}}, j.Status.Conditions...)
		check("timestamp added in front", &j)
		for k := range j.Status.Tasks {
			ts := &j.Status.Tasks[k]
			if ts.StartTime != nil {
				ts.StartTime = timestamp.Ptr(ts.StartTime.Add(time.Nanosecond))
			}
			ts.CompletionTime = nil
		}
		check("task times changed and removed", &j)
		j.Status.Conditions = j.Status.Conditions[1:]
		check("front timestamp removed", &j)
		// One instant in the local zone (with a monotonic reading, as
		// the Runner's clock gives), in UTC and in another zone.
		now := time.Now()
		j.CreatedAt = now
		for k := range j.Status.Conditions {
			switch k % 3 {
			case 0:
				j.Status.Conditions[k].LastTransitionTime = timestamp.New(now.UTC())
			case 1:
				j.Status.Conditions[k].LastTransitionTime = timestamp.New(now.In(time.FixedZone("z", 3*3600)))
			default:
				j.Status.Conditions[k].LastTransitionTime = timestamp.New(now.Round(0))
			}
		}
		check("one instant in several zones", &j)
		check("one instant in several zones, again", &j)
	}
	// The cache is what the encoder reads: a wrong text in it shows.
	j := &Job{Name: "x", CreatedAt: time.Unix(1, 0).UTC()}
	check("small job", j)
	c.times.ents[0].text[0] = '9'
	var got []byte
	if err := encodeJobPooled(j, &c, func(b []byte) error { got = append([]byte(nil), b...); return nil }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(`"createdAt":"9970-`)) {
		t.Fatalf("the cached text was not used: %s", got)
	}
}

// writeTaskConditions turns off leaving out derivable task conditions until
// the test ends, for tests that compare the hand encoder's bytes with
// go-json's. Such tests must not run in parallel.
func writeTaskConditions(t *testing.T) {
	writeAllTaskConditions.Store(true)
	t.Cleanup(func() { writeAllTaskConditions.Store(false) })
}
